//! Progress bars (indicatif) for long steps: one bar over the jobs of a command, one over
//! the current phase of a tune (one per device when several tune at once, labelled `gpuN`).
//! Hidden when output is JSON or not a terminal.

use super::escape::{escape_cell, escape_stream};
use crate::tune::Event;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Mutex;

/// The bars of one command.
pub struct Bars {
    multi: MultiProgress,
    jobs: ProgressBar,
    /// One phase bar per worker (one device each), or a single unlabeled one.
    phases: Vec<Worker>,
    visible: bool,
}

/// A worker's phase bar: its label (`gpu1`, empty for a single worker) and the job it runs.
struct Worker {
    bar: ProgressBar,
    label: String,
    job: Mutex<String>,
}

impl Bars {
    /// Bars over `jobs` jobs; drawn on stderr when `visible`.
    pub fn new(jobs: usize, visible: bool) -> Bars {
        Bars::with_workers(jobs, &[String::new()], visible)
    }

    /// Bars over `jobs` jobs and a phase bar per worker, named by `labels` (`gpu0`, ..: a
    /// tune on every device shows every device's phase).
    pub fn with_workers(jobs: usize, labels: &[String], visible: bool) -> Bars {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template(
            "{prefix:>13} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let jobs_bar = multi.add(ProgressBar::new(jobs as u64));
        jobs_bar.set_style(style.clone());
        jobs_bar.set_prefix("tunes");
        let phases = labels
            .iter()
            .map(|label| {
                let bar = multi.add(ProgressBar::new(0));
                bar.set_style(style.clone());
                bar.set_prefix(escape_cell(label).into_owned());
                Worker {
                    bar,
                    label: escape_cell(label).into_owned(),
                    job: Mutex::new(String::new()),
                }
            })
            .collect();
        Bars {
            multi,
            jobs: jobs_bar,
            phases,
            visible,
        }
    }

    /// One bar over `n` steps of a single job (`bench`): each `step` advances it and names
    /// the step (a plain line on stderr when the bar is hidden).
    pub fn steps(n: usize, visible: bool) -> Bars {
        let b = Bars::new(n, visible);
        b.jobs.set_prefix("bench");
        b
    }

    /// Starts the next step of a `steps` bar.
    pub fn step(&self, what: &str) {
        if self.jobs.position() > 0 || !self.jobs.message().is_empty() {
            self.jobs.inc(1);
        }
        self.jobs.set_message(escape_cell(what).into_owned());
        if !self.visible || self.multi.is_hidden() {
            errln!("tilekit bench: {what}");
        }
    }

    /// A job starts.
    pub fn start_job(&self, what: &str) {
        self.jobs.set_message(escape_cell(what).into_owned());
    }

    /// Worker `w` starts a job: its phase bar names it.
    pub fn start_job_on(&self, w: usize, what: &str) {
        if self.phases.len() == 1 {
            return self.start_job(what);
        }
        if let Some(p) = self.phases.get(w) {
            let what = escape_cell(what).into_owned();
            p.bar.set_message(what.clone());
            if let Ok(mut job) = p.job.lock() {
                *job = what;
            }
        }
    }

    /// A job ended.
    pub fn job_done(&self) {
        self.jobs.inc(1);
    }

    /// A line above the bars (stderr).
    pub fn println(&self, line: &str) {
        // Hidden bars (JSON output, or stderr not a terminal) print nothing: plain lines.
        if self.visible && !self.multi.is_hidden() {
            let _ = self.multi.println(escape_stream(line));
        } else {
            errln!("{line}");
        }
    }

    /// A progress event of worker `w`'s tune, on its bar (`gpu1 time`, the job and the
    /// step); its notes as lines prefixed with the label.
    pub fn event_on(&self, w: usize, e: &Event) {
        let Some(p) = self.phases.get(w) else { return };
        let labelled = |text: &str| {
            if p.label.is_empty() {
                text.to_string()
            } else {
                format!("{} {text}", p.label)
            }
        };
        match e {
            Event::Phase { name, total } => {
                p.bar.set_prefix(labelled(&escape_cell(name)));
                p.bar.set_length(*total as u64);
                p.bar.set_position(0);
                p.bar.reset_elapsed();
            }
            Event::Advance { done, detail, .. } => {
                p.bar.set_position(*done as u64);
                let detail = escape_cell(detail).into_owned();
                let job = p.job.lock().map(|j| j.clone()).unwrap_or_default();
                p.bar.set_message(if job.is_empty() {
                    detail
                } else {
                    format!("{job}: {detail}")
                });
            }
            Event::Note(s) => self.println(&labelled(s)),
        }
    }

    /// Clears the bars.
    pub fn finish(&self) {
        for p in &self.phases {
            p.bar.finish_and_clear();
        }
        self.jobs.finish_and_clear();
    }
}
