//! The correctness gate: a candidate's output against the CPU backend's exact (f64)
//! reference on the same inputs, with outputs poisoned beforehand so an element the
//! candidate does not write is caught.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use tilekit_ir::DType;

/// Relative tolerance per element type of an output, against the exact reference.
///
/// ```
/// use tilekit_ir::DType;
/// assert!(tilekit_tuner::tune::gate::tolerance(DType::BF16) > tilekit_tuner::tune::gate::tolerance(DType::F32));
/// ```
pub fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 2e-5,
        DType::F16 => 2e-3,
        DType::BF16 => 1.6e-2,
        _ => 0.0,
    }
}

/// What comparing one output found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Elements compared (those the reference computed).
    pub compared: usize,
    /// Elements outside the tolerance.
    pub mismatches: usize,
    /// Elements that are NaN (or, for integers, still the poison value) where the reference
    /// has a number, or (when the reference ran only sampled programs) anywhere: not written,
    /// or computed as NaN.
    pub unwritten: usize,
    /// Largest error relative to the tolerance scale (1.0 = at the tolerance).
    #[serde(with = "any_f64")]
    pub worst: f64,
    /// The first few mismatches: (index, got, want).
    #[serde(with = "any_f64::triples")]
    pub examples: Vec<(usize, f64, f64)>,
}

impl Comparison {
    /// True if every compared element is within tolerance and nothing was left unwritten.
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.unwritten == 0
    }
}

/// Compares `got` (the candidate's output) with `want` (the reference). Elements where the
/// reference is NaN are skipped when `sampled` (the reference left them unwritten: its
/// programs ran for a sample of tiles only); then any NaN in `got` counts as unwritten,
/// since every input is finite. Without sampling a NaN in `want` must be NaN in `got`.
///
/// ```
/// use tilekit_tuner::tune::gate::compare;
/// use tilekit_ir::DType;
/// let c = compare(&[1.0, 2.0, f64::NAN], &[1.0, 2.0, 3.0], DType::F32, false);
/// assert_eq!(c.unwritten, 1);
/// assert!(!c.ok());
/// assert!(compare(&[1.0, 2.000001], &[1.0, 2.0], DType::F32, false).ok());
/// ```
pub fn compare(got: &[f64], want: &[f64], dtype: DType, sampled: bool) -> Comparison {
    if got.len() != want.len() {
        return Comparison {
            mismatches: got.len().max(want.len()),
            ..Comparison::default()
        };
    }
    let scale = want
        .par_iter()
        .filter(|w| w.is_finite())
        .map(|w| w.abs())
        .reduce(|| 0.0f64, f64::max);
    // Chunks in parallel, merged in order (so the examples are the first mismatches).
    let parts: Vec<Comparison> = got
        .par_chunks(CHUNK)
        .zip(want.par_chunks(CHUNK))
        .enumerate()
        .map(|(c, (g, w))| compare_chunk(g, w, c * CHUNK, dtype, sampled, scale))
        .collect();
    let mut total = Comparison::default();
    for p in parts {
        total.compared += p.compared;
        total.mismatches += p.mismatches;
        total.unwritten += p.unwritten;
        total.worst = total.worst.max(p.worst);
        for (i, g, w) in p.examples {
            push(&mut total.examples, i, g, w);
        }
    }
    total
}

/// Elements compared per parallel task.
const CHUNK: usize = 1 << 16;

/// The absolute floor of the tolerance, as a fraction of the output's largest magnitude.
const ABS_FLOOR: f64 = 0.05;

/// The same for bf16 and f16 outputs, whose operands of a product are rounded to 8 or 11
/// bits before it (attention's probabilities): see `compare_chunk`.
const ABS_FLOOR_16: f64 = 0.2;

fn compare_chunk(
    got: &[f64],
    want: &[f64],
    offset: usize,
    dtype: DType,
    sampled: bool,
    scale: f64,
) -> Comparison {
    let mut c = Comparison::default();
    let rel = tolerance(dtype);
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let i = offset + k;
        if w.is_nan() {
            if sampled {
                if g.is_nan() {
                    c.unwritten += 1;
                    push(&mut c.examples, i, g, w);
                }
                continue;
            }
            c.compared += 1;
            if !g.is_nan() {
                c.mismatches += 1;
                push(&mut c.examples, i, g, w);
            }
            continue;
        }
        c.compared += 1;
        if g.is_nan() {
            c.unwritten += 1;
            push(&mut c.examples, i, g, w);
            continue;
        }
        // Near zero a relative bound means nothing: the floor is a twentieth of the output's
        // largest magnitude, a fifth for bf16 / f16. An output that averages many rounded terms with cancellation
        // (attention's `o` over 4096 keys, each probability rounded to bf16) ends far below
        // its terms, and its rounding noise reaches ~0.2-0.8% of its largest value (run
        // 117: every candidate failed a 5% floor at 1.9x). A wrong tile or a skipped block
        // still errs by far more.
        let floor = if matches!(dtype, DType::BF16 | DType::F16) {
            ABS_FLOOR_16
        } else {
            ABS_FLOOR
        };
        let bound = rel * (w.abs() + floor * scale) + 1e-30;
        let err = if w.is_infinite() || g.is_infinite() {
            if g == w {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (g - w).abs()
        };
        let ratio = if dtype.is_float() {
            err / bound
        } else if err == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        if ratio > c.worst {
            c.worst = ratio;
        }
        if ratio > 1.0 {
            c.mismatches += 1;
            push(&mut c.examples, i, g, w);
        }
    }
    c
}

fn push(v: &mut Vec<(usize, f64, f64)>, i: usize, g: f64, w: f64) {
    if v.len() < 8 {
        v.push((i, g, w));
    }
}

/// The verdict on one candidate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The seed of the inputs (pass it back with `--seed` to reproduce).
    pub seed: u64,
    /// Whether the reference ran only a sample of the programs (large problems).
    pub sampled: bool,
    /// Per output parameter: its name and the comparison.
    pub outputs: Vec<(String, Comparison)>,
    /// Where the check's time went.
    #[serde(default)]
    pub timings: CheckTimings,
}

/// Wall-clock seconds of the steps of one check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckTimings {
    /// Generating and uploading the inputs (first check of a seed) or poisoning the
    /// outputs again (later checks).
    pub inputs_s: f64,
    /// The candidate's launch, synchronized.
    pub candidate_s: f64,
    /// The CPU backend's exact reference (all programs, or the sample).
    pub reference_s: f64,
    /// Downloading the outputs and comparing them.
    pub compare_s: f64,
}

impl CheckReport {
    /// True if every output matched.
    pub fn ok(&self) -> bool {
        self.outputs.iter().all(|(_, c)| c.ok())
    }

    /// One line for messages.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .outputs
            .iter()
            .map(|(n, c)| {
                let ex: Vec<String> = c
                    .examples
                    .iter()
                    .take(3)
                    .map(|(i, g, w)| format!("[{i}] got {g:e} want {w:e}"))
                    .collect();
                format!(
                    "{n}: {}/{} wrong, {} NaN or unwritten, worst {:.2}x tolerance{}",
                    c.mismatches,
                    c.compared,
                    c.unwritten,
                    c.worst,
                    if ex.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", ex.join(", "))
                    }
                )
            })
            .collect();
        format!(
            "seed {} ({}): {}",
            self.seed,
            if self.sampled {
                "sampled programs"
            } else {
                "full reference"
            },
            parts.join("; ")
        )
    }
}

/// Serde for f64 values that may be NaN or infinite (JSON has no such numbers: they are
/// written as the strings `"NaN"`, `"inf"`, `"-inf"`), so a report survives the worker's
/// JSON lines intact.
mod any_f64 {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Num(f64),
        Text(String),
    }

    fn to_repr(v: f64) -> Repr {
        if v.is_finite() {
            Repr::Num(v)
        } else if v.is_nan() {
            Repr::Text("NaN".into())
        } else if v > 0.0 {
            Repr::Text("inf".into())
        } else {
            Repr::Text("-inf".into())
        }
    }

    fn from_repr(r: Repr) -> f64 {
        match r {
            Repr::Num(v) => v,
            Repr::Text(t) => match t.as_str() {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                _ => f64::NAN,
            },
        }
    }

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        to_repr(*v).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Repr::deserialize(d).map(from_repr)
    }

    /// The same for `(index, got, want)` triples.
    pub mod triples {
        use super::{from_repr, to_repr, Repr};
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer>(v: &[(usize, f64, f64)], s: S) -> Result<S::Ok, S::Error> {
            let r: Vec<(usize, Repr, Repr)> = v
                .iter()
                .map(|&(i, g, w)| (i, to_repr(g), to_repr(w)))
                .collect();
            r.serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Vec<(usize, f64, f64)>, D::Error> {
            let r: Vec<(usize, Repr, Repr)> = Vec::deserialize(d)?;
            Ok(r.into_iter()
                .map(|(i, g, w)| (i, from_repr(g), from_repr(w)))
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report with NaN and infinity crosses JSON (the worker's protocol) unchanged.
    #[test]
    fn non_finite_values_survive_json() {
        let c = compare(
            &[f64::NAN, 1.0, 5.0],
            &[1.0, f64::INFINITY, 5.0],
            DType::I32,
            false,
        );
        assert!(c.worst.is_infinite() && c.examples.iter().any(|e| e.1.is_nan()));
        let r = CheckReport {
            seed: 1,
            sampled: false,
            outputs: vec![("y".into(), c)],
            timings: CheckTimings::default(),
        };
        let back: CheckReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.outputs[0].1.worst, f64::INFINITY);
        assert!(back.outputs[0].1.examples[0].1.is_nan());
        assert_eq!(back.outputs[0].1.mismatches, r.outputs[0].1.mismatches);
    }
}
