//! llama-perplexity's multiple-choice output, byte for byte, so pipelines
//! that parse it keep working (the reference runs' stdout, which the agreement tests compare byte for byte).

/// The two progress lines and the table header that precede the first task.
/// `n_file` tasks were read; `n_scored` are scored; a subset run skips the
/// first line, as llama-perplexity reads tasks at their offsets then.
pub(crate) fn preamble(n_file: usize, n_scored: usize, subset: bool) -> String {
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
pub(crate) fn running_line(done: usize, hits: usize) -> String {
    format!("{done}\t{:.8}\n", 100.0 * hits as f64 / done as f64)
}

/// What follows the last running line on stdout.
pub(crate) const EPILOGUE: &str = "\n\n";

/// The `Final result` and `Random chance` lines llama-perplexity logs, computed
/// in float as it does.
pub(crate) fn final_lines(hits: usize, n: usize, total_options: usize) -> String {
    let k = n as f32 - 1.0;
    let line = |label: &str, p: f32| format!("{label}: {:.4} +/- {:.4}\n", 100.0 * p, 100.0 * (p * (1.0 - p) / k).sqrt());
    line("Final result", hits as f32 / n as f32) + &line("Random chance", n as f32 / total_options as f32)
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

    #[test]
    fn preamble_of_large_and_subset_runs() {
        assert_eq!(preamble(600, 600, false), format!("{}done\n...done\n\ntask\tacc_norm\n", ".".repeat(100)));
        assert_eq!(preamble(300, 100, true), format!("{}done\n\ntask\tacc_norm\n", ".".repeat(100)));
        assert_eq!(preamble(2, 2, false), "..done\n..done\n\ntask\tacc_norm\n");
    }
}
