//! Variants of a kernel on a device: the in-memory caches keyed by [`VariantKey`] (launch
//! plans and loaded functions), and loading a variant from memory, the disk cache or NVRTC.

use super::cache::{self, Counters, Lookup};
use super::ffi;
use super::in_flight;
use super::{lock, CudaDevice};
use crate::cuda::error::CudaLaunchError;
use crate::launch::check_bindings;
use crate::launch::error::LaunchError;
use crate::nvrtc::{self, compile_cubin};
use crate::resources::VariantResources;
use crate::spec::KernelSpec;
use cudarc::driver::{sys, CudaFunction, DriverError};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tilekit_codegen::abi::ENTRY_POINT;
use tilekit_codegen::engine::TmaOperand;
use tilekit_codegen::{
    prelude_headers, variant_plan, variant_source, Access, CodegenError, LaunchPlan, Variant,
    VariantPlan,
};
use tilekit_ir::{Bindings, Config, Kernel};

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_SMEM_LIMIT: u64 = 48 * 1024;

/// A loaded variant: the function (which keeps its module alive) and its launch plan.
#[derive(Debug)]
pub(super) struct Loaded {
    pub func: CudaFunction,
    pub plan: LaunchPlan,
    /// The tensor maps a Hopper-engine variant takes after its parameters: the rings', then
    /// C's where its staged store has a TMA path.
    pub tma: Option<Vec<TmaOperand>>,
    /// A persistent variant (the Hopper engine): at most one block per SM.
    pub persistent: bool,
    /// CTAs per cluster (`CLUSTER = 2` on the Hopper engine), and the most clusters the
    /// device keeps resident at once (the persistent grid's size in clusters).
    pub cluster: u32,
    pub max_clusters: u32,
    /// The most K pieces of a tail tile (`TAIL_SPLIT`): above 1, the variant takes the
    /// runtime's tail workspace after its tensor maps.
    pub tail_split: u32,
    pub smem: u32,
    /// Seconds NVRTC took, when this runtime compiled the variant (not a disk-cache hit).
    pub compile_seconds: Option<f64>,
}

/// What identifies a variant in a runtime's in-memory caches.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct VariantKey {
    spec: u64,
    config: Config,
    bindings: Bindings,
    access: Access,
}

impl VariantKey {
    fn matches(&self, spec: u64, config: &Config, bindings: &Bindings, access: Access) -> bool {
        self.spec == spec
            && self.access == access
            && &self.config == config
            && &self.bindings == bindings
    }
}

/// A hash map from a cheap 64-bit hash to the entries with that hash, so that a lookup
/// hashes the configuration once and clones nothing.
pub(super) type Buckets<V> = HashMap<u64, Vec<(VariantKey, V)>>;

fn bucket(spec: u64, config: &Config, bindings: &Bindings, access: Access) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (spec, config, bindings, access).hash(&mut h);
    h.finish()
}

impl CudaDevice {
    /// The launch plan of the variant a configuration and the access classes select on
    /// this device's target (launch-only values such as `PAD64` are ignored:
    /// [`Config::for_codegen`]): on sm_90a the Hopper engine's plan where the variant takes
    /// it ([`variant_plan`]), so constraints on `smem_bytes()` read the shared memory the
    /// variant that would run uses.
    pub(super) fn plan(
        &self,
        spec: u64,
        kernel: &Kernel,
        config: &Config,
        bindings: &Bindings,
        access: Access,
    ) -> Result<(LaunchPlan, bool), CodegenError> {
        let config = &config.for_codegen();
        let h = bucket(spec, config, bindings, access);
        if let Some(list) = lock(&self.plans).get(&h) {
            if let Some((_, v)) = list
                .iter()
                .find(|(k, _)| k.matches(spec, config, bindings, access))
            {
                return v.clone();
            }
        }
        let variant = Variant {
            config: config.clone(),
            bindings: bindings.clone(),
            access,
            target: self.info.target,
        };
        let plan = variant_plan(kernel, &variant).map(|p| (p.launch, p.tma.is_some()));
        lock(&self.plans).entry(h).or_default().push((
            VariantKey {
                spec,
                config: config.clone(),
                bindings: bindings.clone(),
                access,
            },
            plan.clone(),
        ));
        plan
    }

    /// The loaded function of a variant: from memory, else disk, else NVRTC. Launch-only
    /// values (`PAD64`) do not enter the key or the source ([`Config::for_codegen`]):
    /// configurations that differ only there share one loaded variant.
    pub(super) fn function(
        &self,
        spec: &KernelSpec,
        kernel: &Kernel,
        config: &Config,
        bindings: &Bindings,
        access: Access,
    ) -> Result<Arc<Loaded>, CudaLaunchError> {
        let config = &config.for_codegen();
        let id = spec.content_id();
        let h = bucket(id, config, bindings, access);
        if let Some(list) = lock(&self.functions).get(&h) {
            if let Some((_, v)) = list
                .iter()
                .find(|(k, _)| k.matches(id, config, bindings, access))
            {
                Counters::bump(&self.counters.memory_hits);
                return Ok(v.clone());
            }
        }
        if self.capturing.load(Ordering::Acquire) {
            return Err(CudaLaunchError::NotLoadedForCapture {
                config: config.to_string(),
            });
        }
        let t = Instant::now();
        let variant = Variant {
            config: config.clone(),
            bindings: bindings.clone(),
            access,
            target: self.info.target,
        };
        // The engine (and so threads, shared memory and tensor maps) depends on the target
        // and the access classes: the plan of this variant, not `plan`'s.
        let vplan = variant_plan(kernel, &variant)?;
        let source = variant_source(kernel, spec.cuda_template, &variant)?;
        let codegen = t.elapsed();
        let t = Instant::now();
        let key = cache::cubin_key(
            &source,
            &self.option_args,
            &self.nvrtc_key,
            self.info.target.arch(),
        );
        let mut disk_read = t.elapsed();
        let mut module_load = std::time::Duration::ZERO;
        // A miss claims the compile: another runtime of this process compiling the same
        // entry (another device's) is waited for, then the disk is read again.
        let mut claim = None;
        let from_disk = loop {
            let t = Instant::now();
            let lookup = self.disk.as_deref().map(|d| cache::load(d, &key));
            disk_read += t.elapsed();
            let t = Instant::now();
            let found = match lookup {
                Some(Lookup::Hit(bytes)) => match self.load(bytes, vplan) {
                    Ok(l) => {
                        Counters::bump(&self.counters.disk_hits);
                        Some(l)
                    }
                    Err(_) => {
                        Counters::bump(&self.counters.disk_errors);
                        None
                    }
                },
                Some(Lookup::Corrupt) => {
                    Counters::bump(&self.counters.disk_errors);
                    None
                }
                Some(Lookup::Miss) | None => None,
            };
            module_load += t.elapsed();
            match (found, self.disk.as_deref()) {
                (Some(l), _) => break Some(l),
                (None, None) => break None,
                (None, Some(dir)) => {
                    if let Some(c) = in_flight::claim(dir, &key) {
                        claim = Some(c);
                        break None;
                    }
                }
            }
        };
        let mut compile = std::time::Duration::ZERO;
        let loaded = match from_disk {
            Some(l) => l,
            None => {
                let t = Instant::now();
                self.check_compiler()?;
                let name = format!("{}.cu", kernel.name);
                let cubin = compile_cubin(&source, &name, prelude_headers(), &self.options)?;
                Counters::bump(&self.counters.compiles);
                if let Some(dir) = self.disk.as_deref() {
                    if cache::store(dir, &key, &cubin.bytes).is_err() {
                        Counters::bump(&self.counters.disk_errors);
                    }
                }
                drop(claim);
                compile = t.elapsed();
                let t = Instant::now();
                let mut l = self.load(cubin.bytes, vplan)?;
                module_load += t.elapsed();
                l.compile_seconds = Some(compile.as_secs_f64());
                l
            }
        };
        {
            let mut tm = lock(&self.timings);
            tm.codegen += codegen;
            tm.disk_read += disk_read;
            tm.module_load += module_load;
            tm.compile += compile;
        }
        let loaded = Arc::new(loaded);
        let mut functions = lock(&self.functions);
        let list = functions.entry(h).or_default();
        // Another thread may have loaded the same variant meanwhile (no lock is held while
        // compiling, so that variants compile in parallel): keep the first one.
        if let Some((_, v)) = list
            .iter()
            .find(|(k, _)| k.matches(id, config, bindings, access))
        {
            return Ok(v.clone());
        }
        list.push((
            VariantKey {
                spec: id,
                config: config.clone(),
                bindings: bindings.clone(),
                access,
            },
            loaded.clone(),
        ));
        Ok(loaded)
    }

    /// Before a compile (NVRTC is loaded here if it was not yet): the NVRTC that cudarc
    /// reaches reports the version this runtime recorded at open, so the disk-cache key
    /// (which names the library file found at open) names the compiler in use.
    fn check_compiler(&self) -> Result<(), CudaLaunchError> {
        let (major, minor) = nvrtc::nvrtc_version()?;
        let v = (
            u32::try_from(major).unwrap_or(0),
            u32::try_from(minor).unwrap_or(0),
        );
        match nvrtc::locate::find_library() {
            Some(lib) if v != self.info.nvrtc_version => {
                Err(nvrtc::locate::shadowed(lib, v).into())
            }
            _ => Ok(()),
        }
    }

    /// Loads a CUBIN and opts its entry point into the plan's dynamic shared memory.
    fn load(&self, cubin: Vec<u8>, vplan: VariantPlan) -> Result<Loaded, CudaLaunchError> {
        let plan = vplan.launch;
        let err = |call: &'static str| {
            move |e: DriverError| CudaLaunchError::Driver {
                call,
                message: e.to_string(),
            }
        };
        let smem = u32::try_from(plan.smem_bytes)
            .ok()
            .filter(|&s| u64::from(s) <= self.info.max_smem_optin.max(DEFAULT_SMEM_LIMIT))
            .ok_or_else(|| CudaLaunchError::Driver {
                call: "cuFuncSetAttribute",
                message: format!(
                    "the variant needs {} bytes of shared memory; the device allows {}",
                    plan.smem_bytes, self.info.max_smem_optin
                ),
            })?;
        let module = self
            .ctx
            .load_module(Ptx::from_binary(cubin))
            .map_err(err("cuModuleLoadData"))?;
        let func = module
            .load_function(ENTRY_POINT)
            .map_err(err("cuModuleGetFunction"))?;
        if u64::from(smem) > DEFAULT_SMEM_LIMIT {
            let v = i32::try_from(smem).unwrap_or(i32::MAX);
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                v,
            )
            .map_err(err("cuFuncSetAttribute"))?;
        }
        let cluster = vplan.cluster.max(1);
        let max_clusters = if cluster > 1 {
            ffi::max_active_clusters(&func, plan.threads, smem, cluster)
                .unwrap_or(self.info.sm_count / cluster)
                .max(1)
        } else {
            self.info.sm_count.max(1)
        };
        Ok(Loaded {
            func,
            plan,
            cluster,
            max_clusters,
            tail_split: vplan.tail_split,
            tma: vplan
                .tma
                .map(|rings| rings.iter().copied().chain(vplan.tma_store).collect()),
            persistent: vplan.persistent,
            smem,
            compile_seconds: None,
        })
    }

    /// [`crate::Runtime::prepare_variant`]: validates the configuration and bindings, loads
    /// the variant (memory, disk, NVRTC) and reads its attributes.
    pub(crate) fn prepare(
        &self,
        spec: &KernelSpec,
        config: &Config,
        bindings: &Bindings,
        access: Access,
    ) -> Result<VariantResources, LaunchError> {
        let loaded = self.validated_function(spec, config, bindings, access)?;
        let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
            kernel: spec.name.to_string(),
            source: Box::new(source),
        };
        let attr = |call: &'static str, v: Result<i32, DriverError>| {
            v.map(|v| u32::try_from(v).unwrap_or(0)).map_err(|e| {
                cuda_err(CudaLaunchError::Driver {
                    call,
                    message: e.to_string(),
                })
            })
        };
        let f = &loaded.func;
        Ok(VariantResources {
            registers: attr("cuFuncGetAttribute(NUM_REGS)", f.num_regs())?,
            local_bytes: attr("cuFuncGetAttribute(LOCAL_SIZE_BYTES)", f.local_size_bytes())?,
            smem_bytes: loaded.smem,
            threads: loaded.plan.threads,
            max_threads_per_block: attr(
                "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)",
                f.max_threads_per_block(),
            )?,
            compile_seconds: loaded.compile_seconds,
            cluster: loaded.cluster,
        })
    }

    /// The loaded function of a variant (see `Runtime::cuda_function`).
    pub(crate) fn cuda_function(
        &self,
        spec: &KernelSpec,
        config: &Config,
        bindings: &Bindings,
        access: Access,
    ) -> Result<CudaFunction, LaunchError> {
        Ok(self
            .validated_function(spec, config, bindings, access)?
            .func
            .clone())
    }

    /// The variant, compiled or loaded, after checking the configuration against the
    /// kernel's space and the bindings against its generics.
    fn validated_function(
        &self,
        spec: &KernelSpec,
        config: &Config,
        bindings: &Bindings,
        access: Access,
    ) -> Result<Arc<Loaded>, LaunchError> {
        let analyzed = spec.analyzed()?;
        let kernel = &analyzed.kernel;
        let cuda_err = |source: CudaLaunchError| LaunchError::Cuda {
            kernel: kernel.name.clone(),
            source: Box::new(source),
        };
        let config = kernel
            .space
            .validate(config)
            .map_err(|source| LaunchError::Config {
                kernel: kernel.name.clone(),
                source,
            })?;
        check_bindings(kernel, bindings)?;
        self.function(spec, kernel, &config, bindings, access)
            .map_err(cuda_err)
    }
}
