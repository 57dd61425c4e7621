//! Parsing the resource report that `--ptxas-options=-v` adds to the NVRTC log.
//!
//! ptxas reports each function in three lines:
//!
//! ```text
//! ptxas info    : Compiling entry function 'k' for 'sm_80'
//! ptxas info    : Function properties for k
//!     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ptxas info    : Used 12 registers, used 0 barriers, 4096 bytes smem, 380 bytes cmem[0]
//! ```

/// The resources ptxas reported for one function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionResources {
    /// The (mangled) function name.
    pub name: String,
    /// Whether it is a kernel (`Compiling entry function`) rather than a device function.
    pub is_entry: bool,
    /// Registers per thread (`Used N registers`).
    pub registers: Option<u32>,
    /// Bytes of spill stores.
    pub spill_store_bytes: Option<u32>,
    /// Bytes of spill loads.
    pub spill_load_bytes: Option<u32>,
    /// Bytes of stack frame.
    pub stack_frame_bytes: Option<u32>,
    /// Bytes of static shared memory (`N bytes smem`; 0 when ptxas omits it).
    pub smem_bytes: Option<u32>,
}

/// The functions ptxas reported in `log`, in order. Lines that are not ptxas resource
/// lines are ignored.
pub fn parse_ptxas_log(log: &str) -> Vec<FunctionResources> {
    let mut out: Vec<FunctionResources> = Vec::new();
    // Index into `out` of the function the next property / usage lines belong to.
    let mut current: Option<usize> = None;
    for line in log.lines() {
        let body = strip_ptxas_prefix(line);
        if let Some(rest) = body
            .strip_prefix("Compiling entry function")
            .or_else(|| body.strip_prefix("Function properties for"))
        {
            let is_entry = body.starts_with("Compiling entry function");
            let name = rest
                .trim()
                .split('\'')
                .find(|s| !s.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string();
            current = Some(match out.iter().position(|f| f.name == name) {
                Some(i) => {
                    out[i].is_entry |= is_entry;
                    i
                }
                None => {
                    out.push(FunctionResources {
                        name,
                        is_entry,
                        ..FunctionResources::default()
                    });
                    out.len() - 1
                }
            });
        } else if body.contains("bytes stack frame") {
            if let Some(f) = current.and_then(|i| out.get_mut(i)) {
                for part in body.split(',') {
                    let part = part.trim();
                    if let Some(n) = leading_number(part) {
                        if part.ends_with("bytes stack frame") {
                            f.stack_frame_bytes = Some(n);
                        } else if part.ends_with("bytes spill stores") {
                            f.spill_store_bytes = Some(n);
                        } else if part.ends_with("bytes spill loads") {
                            f.spill_load_bytes = Some(n);
                        }
                    }
                }
            }
        } else if let Some(rest) = body.strip_prefix("Used ") {
            if let Some(f) = current.and_then(|i| out.get_mut(i)) {
                f.smem_bytes = Some(0);
                for part in rest.split(',') {
                    let part = part.trim();
                    if let Some(n) = leading_number(part) {
                        if part.ends_with("registers") {
                            f.registers = Some(n);
                        } else if part.ends_with("bytes smem") {
                            f.smem_bytes = Some(n);
                        }
                    }
                }
            }
        }
    }
    out
}

/// `"ptxas info    : X"` and `"ptxas         .     X"` both become `"X"`.
fn strip_ptxas_prefix(line: &str) -> &str {
    let line = line.trim();
    let Some(rest) = line.strip_prefix("ptxas") else {
        return line;
    };
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("info").unwrap_or(rest).trim_start();
    rest.strip_prefix(':')
        .or_else(|| rest.strip_prefix('.'))
        .unwrap_or(rest)
        .trim()
}

fn leading_number(s: &str) -> Option<u32> {
    let digits: &str = &s[..s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())];
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from NVRTC 13.0 (`--gpu-architecture=sm_80 --ptxas-options=-v
    /// --maxrregcount=24`) on a kernel that spills and calls a `__noinline__` helper.
    const SPILLING_LOG: &str = "\
ptxas info    : Overriding maximum register limit 256 for 'second' with  24 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'spilly' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'second' for 'sm_80'
ptxas info    : Function properties for second
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 0.949 ms
ptxas info    : Compiling entry function 'spilly' for 'sm_80'
ptxas info    : Function properties for spilly
ptxas         .     1200 bytes stack frame, 372 bytes spill stores, 464 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 1200 bytes cumulative stack size, 1024 bytes smem, 372 bytes cmem[0]
ptxas info    : Compile time = 28.573 ms
ptxas info    : Function properties for _Z6helperPKfi
ptxas         .     0 bytes stack frame, 912 bytes spill stores, 1080 bytes spill loads
";

    /// Captured from NVRTC 13.0 for the sm_90a mma.sync + cp.async test kernel.
    const MMA_SM90A_LOG: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'mma_m16n8k16' for 'sm_90a'
ptxas info    : Function properties for mma_m16n8k16
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 22 registers, used 1 barriers, 768 bytes smem
ptxas info    : Compile time = 2.584 ms
";

    #[test]
    fn parses_entries_device_functions_and_spills() {
        let fs = parse_ptxas_log(SPILLING_LOG);
        assert_eq!(
            fs,
            vec![
                FunctionResources {
                    name: "second".into(),
                    is_entry: true,
                    registers: Some(8),
                    spill_store_bytes: Some(0),
                    spill_load_bytes: Some(0),
                    stack_frame_bytes: Some(0),
                    smem_bytes: Some(0),
                },
                FunctionResources {
                    name: "spilly".into(),
                    is_entry: true,
                    registers: Some(24),
                    spill_store_bytes: Some(372),
                    spill_load_bytes: Some(464),
                    stack_frame_bytes: Some(1200),
                    smem_bytes: Some(1024),
                },
                FunctionResources {
                    name: "_Z6helperPKfi".into(),
                    is_entry: false,
                    registers: None,
                    spill_store_bytes: Some(912),
                    spill_load_bytes: Some(1080),
                    stack_frame_bytes: Some(0),
                    smem_bytes: None,
                },
            ]
        );
    }

    #[test]
    fn parses_a_log_without_cmem() {
        let fs = parse_ptxas_log(MMA_SM90A_LOG);
        assert_eq!(fs.len(), 1);
        assert_eq!(fs[0].name, "mma_m16n8k16");
        assert_eq!(fs[0].registers, Some(22));
        assert_eq!(fs[0].smem_bytes, Some(768));
        assert_eq!(fs[0].spill_store_bytes, Some(0));
    }

    #[test]
    fn ignores_logs_without_ptxas_lines() {
        assert!(parse_ptxas_log("k.cu(3): error: expected a \";\"\n").is_empty());
        assert!(parse_ptxas_log("").is_empty());
    }
}
