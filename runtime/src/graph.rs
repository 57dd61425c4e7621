//! [`LaunchGraph`]: a captured sequence of launches and the runtime it replays on (the
//! capture itself, and the registry that keeps captured allocations alive, are
//! `crate::cuda::graph`).

use crate::cuda::graph::Captured;
use crate::launch::error::GraphError;
use crate::launch::error::LaunchError;
use crate::runtime::Runtime;

impl Runtime {
    /// Captures the launches `f` issues on this runtime into a CUDA graph, to be replayed
    /// with [`LaunchGraph::replay`] (one `cuGraphLaunch` for the whole sequence: the
    /// many-small-kernels case).
    ///
    /// ```ignore
    /// // Warm-up: every kernel of the sequence once, eagerly (compiles and loads them).
    /// k1::launch(&rt, &x, &mut t)?;
    /// k2::launch(&rt, &t, &mut y)?;
    /// let g = rt.capture(|rt| {
    ///     k1::launch(rt, &x, &mut t)?;
    ///     k2::launch(rt, &t, &mut y)?;
    ///     Ok(())
    /// })?;
    /// g.replay()?; // same kernels, same buffers: write new data into `x` between replays
    /// rt.synchronize()?;
    /// ```
    ///
    /// Rules:
    /// - **Resolve before capturing.** Nothing is compiled or loaded during a capture: a
    ///   launch whose variant is not in this runtime's in-memory cache fails with
    ///   [`crate::CudaLaunchError::NotLoadedForCapture`] (see
    ///   [`GraphError::is_not_loaded_for_capture`]). Launch each kernel once eagerly first.
    /// - **All or nothing.** If `f` returns an error, or any launch during the capture failed
    ///   (even one whose error `f` ignored), or `f` panics, the capture is ended without
    ///   building a graph and the stream is back in normal mode; the error is returned as
    ///   [`GraphError::Launch`].
    /// - **Only launches inside.** `f` should only launch kernels on this runtime: tensor
    ///   allocation, uploads, downloads and [`Runtime::synchronize`] are refused by the driver
    ///   (or by tilekit) during a capture and make the capture fail. Launches on another
    ///   runtime run eagerly and are not captured.
    /// - **Arguments are frozen.** A replay uses the captured device addresses, shapes,
    ///   scalars and configurations. Tensors passed to captured launches stay allocated for
    ///   the graph's lifetime even if dropped (their memory is freed with the graph).
    /// - Captures do not nest ([`GraphError::AlreadyCapturing`]), and other threads' launches
    ///   on this runtime during a capture would be captured too: capture from one thread.
    ///
    /// On the CPU backend this returns [`GraphError::Unsupported`] without running `f`.
    pub fn capture<F>(&self, f: F) -> Result<LaunchGraph, GraphError>
    where
        F: FnOnce(&Runtime) -> Result<(), LaunchError>,
    {
        let Some(d) = self.cuda_device() else {
            return Err(GraphError::Unsupported {
                backend: self.backend(),
            });
        };
        let captured = crate::cuda::graph::capture(d, || f(self))?;
        Ok(LaunchGraph {
            captured,
            rt: self.clone(),
        })
    }
}

/// A captured sequence of tilekit launches, replayable on the runtime's stream as one CUDA
/// graph (see [`crate::Runtime::capture`]).
///
/// A replay runs the kernels with the arguments they were captured with: the same device
/// addresses (so write fresh inputs into the same tensors between replays, on the runtime's
/// stream, e.g. with a cudarc copy into [`crate::Tensor::as_cuda_slice_mut`]), the same
/// shapes, scalars and configurations. Replays are asynchronous and ordered on the runtime's
/// stream with everything else the runtime issues; errors of the kernels surface at the
/// next synchronization. Not `Send`: CUDA graphs are not internally synchronized.
pub struct LaunchGraph {
    // Field order is drop order: the capture (the executable graph, then the allocations it
    // used), then the runtime.
    pub(crate) captured: Captured,
    pub(crate) rt: Runtime,
}

impl std::fmt::Debug for LaunchGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchGraph")
            .field("launches", &self.captured.launches)
            .field("allocations", &self.captured.retained.len())
            .field("backend", &self.rt.backend())
            .finish_non_exhaustive()
    }
}

impl LaunchGraph {
    /// Enqueues one replay of the captured launches on the runtime's stream (asynchronous:
    /// call [`Runtime::synchronize`] or download a tensor to wait for it). A graph that
    /// captured no launch replays as a no-op.
    pub fn replay(&self) -> Result<(), GraphError> {
        match &self.captured.graph {
            None => Ok(()),
            Some(g) => g.launch().map_err(|e| GraphError::Driver {
                call: "cuGraphLaunch",
                message: e.to_string(),
            }),
        }
    }

    /// Uploads the graph's resources to the device ahead of the first replay (optional:
    /// the first [`LaunchGraph::replay`] does it otherwise).
    pub fn upload(&self) -> Result<(), GraphError> {
        match &self.captured.graph {
            None => Ok(()),
            Some(g) => g.upload().map_err(|e| GraphError::Driver {
                call: "cuGraphUpload",
                message: e.to_string(),
            }),
        }
    }

    /// How many kernel launches were captured (launches of empty tensors launch nothing and
    /// are not counted).
    pub fn launches(&self) -> usize {
        self.captured.launches
    }

    /// The runtime the graph replays on.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }
}
