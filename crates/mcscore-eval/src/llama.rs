//! llama-perplexity's output in its three multiple-choice modes, byte for
//! byte in format, so pipelines that parse it keep working (the reference
//! runs' stdout, which the agreement tests compare): which tasks its rules
//! call right (Winogrande's tie goes to the second option), its running
//! lines, its intervals and its closing lines, computed in float where it
//! computes so. A front end prints what [`LlamaOutput`] returns.

use crate::log::{TaskKind, TaskRecord};

/// llama-perplexity's output for one run of a mode: the lines before the
/// first task, one per task (counting the tasks its rule calls right), and
/// the end.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LlamaOutput {
    kind: TaskKind,
    hits: usize,
}

impl LlamaOutput {
    /// The output of a run of `kind`'s mode, no task counted yet.
    pub fn new(kind: TaskKind) -> LlamaOutput {
        LlamaOutput { kind, hits: 0 }
    }

    /// What it prints on stdout before the first task: `n_scored` of
    /// `n_file` tasks, `subset` when they were picked.
    pub fn preamble(&self, n_file: usize, n_scored: usize, subset: bool) -> String {
        match self.kind {
            TaskKind::MultipleChoice | TaskKind::LmEval => preamble(n_file, n_scored, subset),
            TaskKind::HellaSwag => HELLASWAG_PREAMBLE.to_owned(),
            TaskKind::Winogrande => String::new(),
        }
    }

    /// Counts `record`, the `done`th task of the run, and returns its
    /// running line.
    pub fn line(&mut self, record: &TaskRecord, done: usize) -> String {
        if self.kind == TaskKind::Winogrande {
            self.hits += usize::from(winogrande_hit(record));
            return winogrande_line(done, self.hits, record);
        }
        self.hits += usize::from(record.correct.acc_norm);
        match self.kind {
            TaskKind::HellaSwag => hellaswag_line(done, self.hits),
            _ => running_line(done, self.hits),
        }
    }

    /// What it logs on stderr after the last of `n` tasks (`total_options`
    /// options in all); [`EPILOGUE`] ends its stdout before.
    pub fn final_lines(&self, n: usize, total_options: usize) -> String {
        match self.kind {
            TaskKind::MultipleChoice | TaskKind::LmEval => final_lines(self.hits, n, total_options),
            TaskKind::HellaSwag => String::new(),
            TaskKind::Winogrande => winogrande_final(self.hits, n).unwrap_or_default(),
        }
    }
}

/// The two progress lines and the table header that precede the first task.
/// `n_file` tasks were read; `n_scored` are scored; a subset run skips the
/// first line, as llama-perplexity reads tasks at their offsets then.
fn preamble(n_file: usize, n_scored: usize, subset: bool) -> String {
    let dots = |n: usize| ".".repeat(n / (n / 100).max(1));
    let mut out = String::new();
    if !subset {
        out.push_str(&dots(n_file));
        out.push_str("done\n");
    }
    // Over 500 tasks llama-perplexity prepares them on threads and prints "...".
    out.push_str(&if n_scored > 500 { "...".to_owned() } else { dots(n_scored) });
    out.push_str("done\n\ntask\tacc_norm\n");
    out
}

/// The running accuracy after `done` tasks, `hits` of them right.
fn running_line(done: usize, hits: usize) -> String {
    format!("{done}\t{:.8}\n", 100.0 * hits as f64 / done as f64)
}

/// What follows the last running line on stdout.
pub const EPILOGUE: &str = "\n\n";

/// The `Final result` and `Random chance` lines llama-perplexity logs, computed
/// in float as it does.
fn final_lines(hits: usize, n: usize, total_options: usize) -> String {
    let k = n as f32 - 1.0;
    let line = |label: &str, p: f32| format!("{label}: {:.4} +/- {:.4}\n", 100.0 * p, 100.0 * (p * (1.0 - p) / k).sqrt());
    line("Final result", hits as f32 / n as f32) + &line("Random chance", n as f32 / total_options as f32)
}

/// HellaSwag's table header (its stdout starts with an empty line).
const HELLASWAG_PREAMBLE: &str = "\ntask\tacc_norm\t95% confidence interval\n";

/// HellaSwag's running line: the accuracy after `done` tasks and its 95 %
/// Wilson score interval, as llama-perplexity computes them.
fn hellaswag_line(done: usize, hits: usize) -> String {
    let p = mcscore_metrics::Proportion { successes: hits, n: done };
    let (low, high) = p.wilson_percent();
    format!("{done}\t{:3.8}%\t[{:3.4}%, {:3.4}%]\n", hits as f64 / done as f64 * 100.0, low, high)
}

/// Winogrande's choice: 1 where the first option's mean log-probability is
/// strictly higher, else 2 (so a tie goes to the second, unlike acc_norm).
fn winogrande_choice(record: &TaskRecord) -> usize {
    // a Winogrande record has exactly 2 options: prepare_blanks and check_record refuse others
    let mean = |k: usize| record.options[k].logprob_sum / f64::from(record.options[k].tokens);
    if mean(0) > mean(1) {
        1
    } else {
        2
    }
}

/// Whether llama-perplexity's Winogrande rule picks the gold option.
fn winogrande_hit(record: &TaskRecord) -> bool {
    record.gold == Some(winogrande_choice(record) - 1)
}

/// Winogrande's running line: the accuracy after `done` tasks, the two
/// options' mean log-probabilities, the choice and the answer.
fn winogrande_line(done: usize, hits: usize, record: &TaskRecord) -> String {
    // a Winogrande record has exactly 2 options: prepare_blanks and check_record refuse others
    let mean = |k: usize| record.options[k].logprob_sum / f64::from(record.options[k].tokens);
    format!(
        "{done}\t{:.4}\t{:10.6}  {:10.6}  {}  {}\n",
        100.0 * hits as f64 / done as f64,
        mean(0),
        mean(1),
        winogrande_choice(record),
        record.gold.map_or(0, |g| g + 1)
    )
}

/// Winogrande's final line, computed in float as llama-perplexity does; it
/// prints none below 100 tasks.
fn winogrande_final(hits: usize, n: usize) -> Option<String> {
    if n < 100 {
        return None;
    }
    let p = hits as f32 / n as f32;
    let sigma = 100.0 * (p * (1.0 - p) / (n - 1) as f32).sqrt();
    Some(format!("Final Winogrande score({n} tasks): {:.4} +/- {:.4}\n", 100.0 * p, sigma))
}

#[cfg(test)]
mod tests {
    //! Renders the reference runs from their per-option scores and compares
    //! with what llama-perplexity printed.
    use super::*;
    use std::path::PathBuf;

    fn reference(name: &str) -> String {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference").join(name);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (the tests read ../shared/reference beside the checkout)", path.display()))
    }

    /// Per task: whether the first maximum of the mean log-probability is gold.
    fn reference_hits(stem: &str) -> Vec<bool> {
        let tsv = reference(&format!("{stem}.llama-perplexity.options.tsv"));
        let jsonl = reference(&format!("{stem}.jsonl"));
        let mut scores: Vec<Vec<f64>> = Vec::new();
        for line in tsv.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            let (task, sum, tokens): (usize, f64, f64) = (f[0].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap());
            if scores.len() <= task {
                scores.push(Vec::new());
            }
            scores[task].push(sum / tokens);
        }
        jsonl
            .lines()
            .zip(scores)
            .map(|(line, s)| {
                let task: serde_json::Value = serde_json::from_str(line).unwrap();
                let best = (1..s.len()).fold(0, |b, k| if s[k] > s[b] { k } else { b });
                task["labels"][best] == 1
            })
            .collect()
    }

    #[test]
    fn reference_stdout_and_final_lines_are_reproduced() {
        for (stem, options) in [("mc_letter4", 4 * 200), ("mc_text5", 5 * 100), ("mc_mixed", 4 * 200 + 5 * 100)] {
            let hits = reference_hits(stem);
            let n = hits.len();
            let mut stdout = preamble(n, n, false);
            let mut correct = 0;
            for (i, &hit) in hits.iter().enumerate() {
                correct += usize::from(hit);
                stdout.push_str(&running_line(i + 1, correct));
            }
            stdout.push_str(EPILOGUE);
            assert_eq!(stdout, reference(&format!("{stem}.llama-perplexity.stdout")), "{stem}");
            let stderr = reference(&format!("{stem}.llama-perplexity.stderr"));
            for line in final_lines(correct, n, options).lines() {
                assert!(stderr.contains(&format!("I {line}\n")), "{stem}: {line:?} not in its stderr");
            }
        }
    }

    fn committed(name: &str) -> String {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mcscore-cli/tests/data/llama-perplexity").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn hellaswag_stdout_is_reproduced_from_its_hits() {
        let reference = committed("hellaswag-200.llama-perplexity.stdout");
        let mut stdout = HELLASWAG_PREAMBLE.to_owned();
        let mut hits = 0;
        for line in reference.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())) {
            let fields: Vec<&str> = line.split('\t').collect();
            let done: usize = fields[0].parse().unwrap();
            hits = (fields[1].trim_end_matches('%').parse::<f64>().unwrap() * done as f64 / 100.0).round() as usize;
            stdout.push_str(&hellaswag_line(done, hits));
        }
        assert!(hits > 0);
        stdout.push_str(EPILOGUE);
        assert_eq!(stdout, reference);
    }

    #[test]
    fn winogrande_stdout_and_final_line_are_reproduced_from_its_scores() {
        let reference = committed("winogrande-201.llama-perplexity.stdout");
        let mut stdout = String::new();
        let mut hits = 0;
        let mut n = 0;
        for line in reference.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let means: Vec<f64> = fields[2..4].iter().map(|f| f.parse().unwrap()).collect();
            let gold = fields[5].parse::<usize>().unwrap() - 1;
            let options = means.iter().map(|&m| mcscore_metrics::OptionScore::new(m, 1, 1, 1)).collect();
            let record = TaskRecord::new(n, options, vec![gold == 0, gold == 1]);
            n += 1;
            hits += usize::from(winogrande_hit(&record));
            stdout.push_str(&winogrande_line(n, hits, &record));
        }
        stdout.push_str(EPILOGUE);
        assert_eq!(stdout, reference);
        let stderr = committed("winogrande-201.llama-perplexity.stderr");
        assert!(stderr.contains(&format!("I {}", winogrande_final(hits, n).unwrap())), "{stderr}");
        assert_eq!(winogrande_final(50, 99), None);
    }

    #[test]
    fn preamble_of_large_and_subset_runs() {
        assert_eq!(preamble(600, 600, false), format!("{}done\n...done\n\ntask\tacc_norm\n", ".".repeat(100)));
        assert_eq!(preamble(300, 100, true), format!("{}done\n\ntask\tacc_norm\n", ".".repeat(100)));
        assert_eq!(preamble(2, 2, false), "..done\n..done\n\ntask\tacc_norm\n");
    }
}
