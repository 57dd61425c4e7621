//! Progress bars (indicatif) for long steps: one bar over the jobs of a command, one over
//! the current phase of a tune. Hidden when output is JSON or not a terminal.

use super::escape::{escape_cell, escape_stream};
use crate::tune::Event;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bars of one command.
pub struct Bars {
    multi: MultiProgress,
    jobs: ProgressBar,
    phase: ProgressBar,
    visible: bool,
}

impl Bars {
    /// Bars over `jobs` jobs; drawn on stderr when `visible`.
    pub fn new(jobs: usize, visible: bool) -> Bars {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let style = ProgressStyle::with_template(
            "{prefix:>8} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        let jobs_bar = multi.add(ProgressBar::new(jobs as u64));
        jobs_bar.set_style(style.clone());
        jobs_bar.set_prefix("tunes");
        let phase = multi.add(ProgressBar::new(0));
        phase.set_style(style);
        Bars {
            multi,
            jobs: jobs_bar,
            phase,
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

    /// A tune's progress event.
    pub fn event(&self, e: &Event) {
        match e {
            Event::Phase { name, total } => {
                self.phase.set_prefix(escape_cell(name).into_owned());
                self.phase.set_length(*total as u64);
                self.phase.set_position(0);
                self.phase.reset_elapsed();
            }
            Event::Advance { done, detail, .. } => {
                self.phase.set_position(*done as u64);
                self.phase.set_message(escape_cell(detail).into_owned());
            }
            Event::Note(s) => self.println(s),
        }
    }

    /// Clears the bars.
    pub fn finish(&self) {
        self.phase.finish_and_clear();
        self.jobs.finish_and_clear();
    }
}
