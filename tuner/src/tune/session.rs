//! [`Session`]: one tuning problem set up on a GPU — inputs rotated beyond L2, CUDA-event
//! timing of a configuration, and the correctness check against the CPU reference. The
//! worker subprocess runs one; `Isolation::InProcess` runs one in the caller's process.

use super::data::ArgSet;
use super::gate::{compare, CheckReport, CheckTimings};
use super::problem::TuneProblem;
use super::TuneError;
use std::sync::Arc;
use tilekit_ir::{Config, Kernel, ParamKind};
use tilekit_runtime::cudarc::driver::sys::CUevent_flags;
use tilekit_runtime::cudarc::driver::CudaStream;
use tilekit_runtime::{
    launch_cpu_with_options, launch_lists, launch_with, CpuOptions, KernelSpec, LaunchArg,
    ProgramSample, Runtime,
};

/// Bytes the rotation of input sets should cover at least: beyond the H100's 50 MB L2, so a
/// timed launch never finds its inputs in cache.
pub const ROTATION_BYTES: u64 = 128 << 20;

/// Bytes of the buffer cleared to evict L2 (the H100's L2 is 50 MB).
pub const FLUSH_BYTES: usize = 128 << 20;

/// Free device memory, when the runtime is on a GPU.
fn device_free_bytes(rt: &Runtime) -> Option<u64> {
    let stream = rt.cuda_stream()?;
    stream.context().bind_to_thread().ok()?;
    tilekit_runtime::cudarc::driver::result::mem_get_info()
        .ok()
        .map(|(free, _)| free as u64)
}

/// Most input sets in a rotation.
pub const MAX_ROTATION: usize = 32;

/// Problems up to this many FLOPs and bytes are checked against a full reference; larger
/// ones against [`SAMPLED_PROGRAMS`] programs of it.
pub const FULL_CHECK_FLOPS: u64 = 1 << 30;
/// See [`FULL_CHECK_FLOPS`].
pub const FULL_CHECK_BYTES: u64 = 64 << 20;
/// Programs of the reference run for a large problem.
pub const SAMPLED_PROGRAMS: usize = 24;

/// A problem set up for measurement on a CUDA runtime.
pub struct Session<'a> {
    rt: &'a Runtime,
    spec: &'a KernelSpec,
    kernel: &'a Kernel,
    problem: TuneProblem,
    /// The CUDA stream (`None` on the CPU backend: timed with the host clock).
    stream: Option<Arc<CudaStream>>,
    sets: Vec<ArgSet>,
    next: usize,
    /// Some tensor is read and written: restore it before every timed launch.
    reset: bool,
    /// The seed of the rotation's inputs.
    seed: u64,
    /// A device buffer cleared before each timed launch to evict L2, when rotation alone
    /// does not (see [`Session::new`]).
    flush: Option<tilekit_runtime::cudarc::driver::CudaSlice<u8>>,
    /// The inputs of the last correctness check, kept for the next one of the same seed.
    check_data: Option<CheckData>,
}

/// The inputs of a correctness check: host data and its copies on the GPU and the CPU.
/// `host` and `gpu` are `None` when the check runs on the first input set of the rotation
/// (a check with the session's own seed: the same random inputs, outputs poisoned again).
struct CheckData {
    seed: u64,
    host: Option<Vec<Option<super::data::HostVec>>>,
    gpu: Option<ArgSet>,
    cpu: ArgSet,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("problem", &self.problem)
            .field("rotation", &self.sets.len())
            .finish_non_exhaustive()
    }
}

/// Launches `config` on the arguments of `set`; a failure is the candidate's.
fn launch_set(
    rt: &Runtime,
    spec: &KernelSpec,
    bindings: &tilekit_ir::Bindings,
    set: &mut ArgSet,
    config: &Config,
) -> Result<(), TuneError> {
    let args = set.launch_args();
    let lists = spec.analyzed().map_or(&[][..], |a| &a.kernel.lists[..]);
    if lists.is_empty() {
        let mut args = args;
        return launch_with(rt, spec, config, bindings, &mut args)
            .map_err(|e| TuneError::Candidate(e.to_string()));
    }
    // A kernel over tensor lists is tuned on lists of one member each: the problem's shapes.
    let args = args
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            if lists.binary_search(&i).is_ok() {
                LaunchArg::List(vec![a])
            } else {
                LaunchArg::One(a)
            }
        })
        .collect();
    launch_lists(rt, spec, Some(config), bindings, args)
        .map_err(|e| TuneError::Candidate(e.to_string()))
}

fn rt_err(e: impl std::fmt::Display) -> TuneError {
    TuneError::Runtime(e.to_string())
}

impl<'a> Session<'a> {
    /// Allocates and fills the rotation of input sets on `rt` (inputs from `seed`).
    pub fn new(
        rt: &'a Runtime,
        spec: &'a KernelSpec,
        problem: TuneProblem,
        seed: u64,
    ) -> Result<Session<'a>, TuneError> {
        let kernel = spec.kernel().map_err(rt_err)?;
        let stream = rt.cuda_stream().cloned();
        let per_set = problem.tensor_bytes(kernel)?.max(1);
        let count = usize::try_from(ROTATION_BYTES.div_ceil(per_set))
            .unwrap_or(MAX_ROTATION)
            .clamp(1, MAX_ROTATION);
        // Refuse a problem the device cannot hold, before generating anything (a worker
        // killed by an allocation failure says nothing useful).
        if let Some(free) = device_free_bytes(rt) {
            if per_set > free {
                return Err(TuneError::Problem(format!(
                    "{problem} needs {:.2} GB of device memory for one set of arguments; \
                     the device has {:.2} GB free",
                    per_set as f64 / 1e9,
                    free as f64 / 1e9
                )));
            }
        }
        let host = ArgSet::host_data(kernel, &problem, seed)?;
        let mut sets = Vec::with_capacity(count);
        for _ in 0..count {
            sets.push(ArgSet::upload(rt, kernel, &problem, &host)?);
        }
        let reset = kernel.read_written_params().iter().any(|&i| {
            matches!(
                kernel.params[i].kind,
                ParamKind::Tensor { mutable: true, .. }
            )
        });
        // Too small to rotate beyond L2, or a tensor restored right before each launch (hot in
        // L2): a scratch buffer larger than L2 is cleared before every timed launch instead.
        let covered = per_set.saturating_mul(count as u64);
        let flush = match &stream {
            Some(st) if covered < ROTATION_BYTES || reset => {
                Some(st.alloc_zeros::<u8>(FLUSH_BYTES).map_err(rt_err)?)
            }
            _ => None,
        };
        rt.synchronize().map_err(rt_err)?;
        Ok(Session {
            flush,
            rt,
            spec,
            kernel,
            problem,
            stream,
            sets,
            next: 0,
            reset,
            seed,
            check_data: None,
        })
    }

    /// Number of input sets in the rotation.
    pub fn rotation(&self) -> usize {
        self.sets.len()
    }

    /// The runtime it measures on.
    pub fn runtime(&self) -> &'a Runtime {
        self.rt
    }

    /// The problem.
    pub fn problem(&self) -> &TuneProblem {
        &self.problem
    }

    fn launch_next(&mut self, config: &Config) -> Result<(), TuneError> {
        let i = self.next % self.sets.len();
        self.next = self.next.wrapping_add(1);
        let (rt, spec, bindings) = (self.rt, self.spec, &self.problem.bindings);
        launch_set(rt, spec, bindings, &mut self.sets[i], config)
    }

    fn reset_next(&mut self) -> Result<(), TuneError> {
        if self.reset {
            let i = self.next % self.sets.len();
            self.sets[i].reset_outputs(self.rt)?;
        }
        Ok(())
    }

    /// `samples` event-timed launches of `config` (milliseconds each) after `warmup`
    /// untimed ones, each on the next input set of the rotation.
    pub fn time(
        &mut self,
        config: &Config,
        warmup: usize,
        samples: usize,
    ) -> Result<Vec<f64>, TuneError> {
        for _ in 0..warmup {
            self.reset_next()?;
            self.launch_next(config)?;
        }
        self.rt
            .synchronize()
            .map_err(|e| TuneError::Candidate(e.to_string()))?;
        let Some(stream) = self.stream.clone() else {
            // CPU backend: the host clock (launches are synchronous there).
            let mut out = Vec::with_capacity(samples);
            for _ in 0..samples {
                self.reset_next()?;
                let t = std::time::Instant::now();
                self.launch_next(config)?;
                out.push(t.elapsed().as_secs_f64() * 1e3);
            }
            return Ok(out);
        };
        let ctx = stream.context().clone();
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(rt_err)?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(rt_err)?;
        let mut out = Vec::with_capacity(samples);
        for _ in 0..samples {
            self.reset_next()?;
            if let Some(f) = self.flush.as_mut() {
                stream.memset_zeros(f).map_err(rt_err)?;
            }
            start.record(&stream).map_err(rt_err)?;
            self.launch_next(config)?;
            end.record(&stream).map_err(rt_err)?;
            end.synchronize()
                .map_err(|e| TuneError::Candidate(e.to_string()))?;
            out.push(f64::from(start.elapsed_ms(&end).map_err(rt_err)?));
        }
        Ok(out)
    }

    /// Interleaved timing: `rounds` rounds, each timing every configuration once (in an
    /// order rotated per round), so drift affects all alike. Milliseconds per config.
    pub fn interleave(
        &mut self,
        configs: &[Config],
        rounds: usize,
    ) -> Result<Vec<Vec<f64>>, TuneError> {
        let mut out = vec![Vec::with_capacity(rounds); configs.len()];
        for c in configs {
            self.time(c, 1, 0)?;
        }
        for r in 0..rounds {
            for k in 0..configs.len() {
                let i = (k + r) % configs.len();
                let t = self.time(&configs[i], 0, 1)?;
                out[i].extend(t);
            }
        }
        Ok(out)
    }

    /// Checks `config` against the CPU backend's exact reference on the random inputs of
    /// `seed`, outputs poisoned first (see [`super::gate`]). With the session's own seed
    /// (what the search does) the first timing set's inputs are reused on the GPU: the same
    /// data the candidate was timed on, generated for this tune.
    pub fn check(&mut self, config: &Config, seed: u64) -> Result<CheckReport, TuneError> {
        let kernel = self.kernel;
        // Inputs of a seed are generated and uploaded once: every finalist's check reuses
        // them, with its outputs poisoned afresh.
        let t = std::time::Instant::now();
        let cached = self.check_data.take().filter(|c| c.seed == seed);
        let mut data = match cached {
            Some(mut c) => {
                match c.gpu.as_mut() {
                    Some(g) => g.reset_outputs(self.rt)?,
                    None => self.sets[0].reset_outputs(self.rt)?,
                }
                c.cpu.reset_outputs(&Runtime::cpu())?;
                c
            }
            // The session's seed: the first timing set already holds these inputs on the
            // GPU; only its outputs are poisoned again.
            None if seed == self.seed => {
                self.sets[0].reset_outputs(self.rt)?;
                let cpu =
                    ArgSet::upload(&Runtime::cpu(), kernel, &self.problem, &self.sets[0].host)?;
                CheckData {
                    seed,
                    host: None,
                    gpu: None,
                    cpu,
                }
            }
            None => {
                let host = ArgSet::host_data(kernel, &self.problem, seed)?;
                let gpu = ArgSet::upload(self.rt, kernel, &self.problem, &host)?;
                let cpu = ArgSet::upload(&Runtime::cpu(), kernel, &self.problem, &host)?;
                CheckData {
                    seed,
                    host: Some(host),
                    gpu: Some(gpu),
                    cpu,
                }
            }
        };
        let inputs_s = t.elapsed().as_secs_f64();
        let report = self.check_with(config, seed, &mut data);
        // After a wrong or failed candidate the inputs may be damaged (a stray write that did
        // not fault): the next check starts from fresh copies.
        if report.as_ref().is_ok_and(|r| r.ok()) {
            self.check_data = Some(data);
        } else if data.gpu.is_none() {
            self.sets[0].restore_all(self.rt)?;
        }
        report.map(|mut r| {
            r.timings.inputs_s = inputs_s;
            r
        })
    }

    fn check_with(
        &mut self,
        config: &Config,
        seed: u64,
        data: &mut CheckData,
    ) -> Result<CheckReport, TuneError> {
        let kernel = self.kernel;
        let mut timings = CheckTimings::default();
        let t = std::time::Instant::now();
        {
            let gpu = match data.gpu.as_mut() {
                Some(g) => g,
                None => &mut self.sets[0],
            };
            launch_set(self.rt, self.spec, &self.problem.bindings, gpu, config)?;
        }
        self.rt
            .synchronize()
            .map_err(|e| TuneError::Candidate(e.to_string()))?;
        timings.candidate_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        // A kernel with no `#[cost(flops)]` may be compute-heavy: unknown counts as large.
        let flops = match kernel.problem.flops {
            Some(_) => self.problem.flops(kernel).unwrap_or(u64::MAX),
            None => u64::MAX,
        };
        let bytes = self.problem.bytes(kernel).unwrap_or(u64::MAX);
        // A kernel's atomic adds gather every program's work: only a full reference checks
        // them.
        let sampled =
            (flops > FULL_CHECK_FLOPS || bytes > FULL_CHECK_BYTES) && !kernel.has_atomics();
        let reference = &mut data.cpu;
        // Outputs that are also read keep their inputs; pure outputs are poisoned (NaN), so
        // a sampled reference leaves NaN where its programs did not run.
        let options = CpuOptions {
            exact: true,
            sample: sampled.then_some(ProgramSample {
                count: SAMPLED_PROGRAMS,
                seed,
            }),
        };
        {
            let mut args = reference.launch_args();
            launch_cpu_with_options(
                self.spec,
                config,
                &self.problem.bindings,
                &mut args,
                &options,
            )
            .map_err(|e| TuneError::Reference(e.to_string()))?;
        }
        timings.reference_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let read_written = kernel.read_written_params();
        let gpu = data.gpu.as_ref().unwrap_or(&self.sets[0]);
        let host = data.host.as_ref().unwrap_or(&self.sets[0].host);
        let mut report = CheckReport {
            seed,
            sampled,
            outputs: Vec::new(),
            timings: CheckTimings::default(),
        };
        for i in gpu.outputs() {
            let dtype = match &kernel.params[i].kind {
                ParamKind::Tensor { elem, .. } => elem.resolve(&self.problem.bindings),
                _ => None,
            }
            .unwrap_or(tilekit_ir::DType::F32);
            let mut got = gpu.read(i)?;
            let mut want = reference.read(i)?;
            if !dtype.is_float() {
                // Integers carry a sentinel instead of NaN: an element still holding it was
                // not written (by the candidate, or by the sampled reference's programs).
                for v in got.iter_mut().chain(want.iter_mut()) {
                    if *v == super::data::INT_POISON {
                        *v = f64::NAN;
                    }
                }
            }
            if sampled && read_written.contains(&i) {
                // A tensor that is read and written keeps its input where the sampled
                // programs did not run: compare only what the reference changed.
                if let Some(Some(input)) = host.get(i).map(|h| h.as_ref().map(|h| h.to_f64())) {
                    for (w, x) in want.iter_mut().zip(&input) {
                        if *w == *x {
                            *w = f64::NAN;
                        }
                    }
                }
            }
            report.outputs.push((
                kernel.params[i].name.clone(),
                compare(&got, &want, dtype, sampled),
            ));
        }
        timings.compare_s = t.elapsed().as_secs_f64();
        report.timings = timings;
        Ok(report)
    }
}
