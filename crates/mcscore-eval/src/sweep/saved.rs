//! Reading saved sweeps back: checking their figures, bringing old ones to
//! fractions and putting sweeps of the same items side by side; and saving them.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use mcscore_format::AtomicFile;
use serde::{Deserialize, Serialize};

use super::report::{rank, spread};
use super::{FormatResult, ModelSweep, SweepIdentity, SweepReport};
use crate::{EvalError, SweepError, SweepFault};

impl SweepReport {
    /// The sweep these results are of, whatever the models.
    pub fn identity(&self) -> SweepIdentity {
        SweepIdentity {
            items_sha256: self.items_sha256.clone(),
            formats: self.formats.clone(),
            circular: self.circular,
            instruction: self.instruction,
            pride_alpha: self.pride_alpha,
            chat_template: None,
        }
    }

    /// What a share of 1 is written as in this report: 100 in a sweep saved
    /// before schema 2 (accuracy points), else 1.
    fn full_share(&self) -> f64 {
        if self.schema_version < 2 {
            100.0
        } else {
            1.0
        }
    }

    /// A sweep saved before schema 2, in accuracy points, brought to
    /// fractions; a newer one is left as it is.
    fn migrate(&mut self) {
        if self.schema_version >= 2 {
            return;
        }
        let fraction = |x: &mut f64| *x /= 100.0;
        for m in &mut self.models {
            for f in &mut m.formats {
                fraction(&mut f.accuracy);
                f.accuracy_by_rotation.iter_mut().for_each(fraction);
                f.circular_accuracy.as_mut().map(fraction);
                for (low, high) in f.accuracy_interval.iter_mut().chain(f.circular_interval.iter_mut()) {
                    fraction(low);
                    fraction(high);
                }
                fraction(&mut f.rstd);
                if let Some(p) = &mut f.pride {
                    [&mut p.accuracy_before, &mut p.accuracy_after, &mut p.rstd_before, &mut p.rstd_after].into_iter().for_each(fraction);
                }
            }
            for spread in std::iter::once(&mut m.accuracy_across_formats).chain(m.circular_accuracy_across_formats.as_mut()) {
                [&mut spread.mean, &mut spread.std, &mut spread.min, &mut spread.max].into_iter().for_each(fraction);
            }
        }
        self.schema_version = crate::results::SCHEMA_VERSION;
    }
}

/// Saved sweeps of the same items side by side: their models in one report,
/// compared again.
pub fn merge_saved(paths: &[PathBuf]) -> Result<SweepReport, EvalError> {
    let mut merged: Option<SweepReport> = None;
    for (i, path) in paths.iter().enumerate() {
        let bytes = mcscore_format::read_input(path)?;
        let not_a_sweep = |source| EvalError::Sweep(SweepError::NotASweep { path: path.clone(), source });
        let bad = |fault| EvalError::Sweep(SweepError::BadSweep { path: path.clone(), fault: Box::new(fault) });
        // The version alone first: a newer schema is named as such, not as
        // whatever field it changed.
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            schema_version: u64,
        }
        let max = crate::results::SCHEMA_VERSION;
        let version = serde_json::from_slice::<Version>(&bytes).map_err(not_a_sweep)?.schema_version;
        if version > u64::from(max) {
            return Err(bad(SweepFault::NewerSchema { version, max }));
        }
        let mut report: SweepReport = serde_json::from_slice(&bytes).map_err(not_a_sweep)?;
        if report.formats.is_empty() || report.models.is_empty() {
            return Err(bad(SweepFault::Empty { formats: report.formats.len(), models: report.models.len() }));
        }
        if let Some(m) = report.models.iter().find(|m| m.formats.len() != report.formats.len()) {
            return Err(bad(SweepFault::FormatCount { model: m.model.clone(), found: m.formats.len(), formats: report.formats.len() }));
        }
        let pride = report.pride_alpha.is_some();
        if let Some((m, f)) = report.models.iter().find_map(|m| Some((m, m.formats.iter().find(|f| f.pride.is_some() != pride)?))) {
            let fault = SweepFault::Pride { model: m.model.clone(), format: f.format.clone(), has: !pride, alpha: report.pride_alpha };
            return Err(bad(fault));
        }
        // Checked as saved, so that a fault names the value the file holds.
        check_figures(&report).map_err(bad)?;
        report.migrate();
        if let Some(earlier) = paths[..i].iter().find(|p| mcscore_format::same_file(p, path)) {
            return Err(bad(SweepFault::Repeated { earlier: earlier.clone() }));
        }
        let Some(first) = merged.as_mut() else {
            merged = Some(report);
            continue;
        };
        if let Some(m) = first.identity().mismatch(&report.identity()) {
            return Err(EvalError::Sweep(SweepError::OtherSweep { path: path.clone(), what: m.field, first: paths[0].clone() }));
        }
        first.models.extend(report.models);
    }
    let mut report = merged.ok_or(EvalError::NoLogs)?;
    report.comparison = (report.models.len() > 1).then(|| rank(&report.models, report.circular));
    Ok(report)
}

/// Why the figures of a saved sweep cannot be a sweep's, if they cannot.
fn check_figures(report: &SweepReport) -> Result<(), SweepFault> {
    check_tasks_and_formats(report)?;
    for m in &report.models {
        check_model(report, m)?;
        for f in &m.formats {
            check_shares(report, m, f)?;
            check_picks(report, m, f)?;
        }
        check_spreads(report, m)?;
    }
    Ok(())
}

/// Some tasks, and no format named twice.
fn check_tasks_and_formats(report: &SweepReport) -> Result<(), SweepFault> {
    if report.tasks == 0 {
        return Err(SweepFault::NoTasks);
    }
    let mut names = HashSet::new();
    if let Some(twice) = report.formats.iter().find(|f| !names.insert(f.as_str())) {
        return Err(SweepFault::FormatTwice(twice.clone()));
    }
    Ok(())
}

/// A model's prompts and scoring time, and its formats in the sweep's order.
fn check_model(report: &SweepReport, m: &ModelSweep) -> Result<(), SweepFault> {
    if m.prompts == 0 || m.scoring_seconds.is_nan() || m.scoring_seconds < 0.0 {
        return Err(SweepFault::Prompts { model: m.model.clone(), prompts: m.prompts, seconds: m.scoring_seconds });
    }
    if let Some((f, name)) = m.formats.iter().zip(&report.formats).find(|(f, name)| f.format != **name) {
        return Err(SweepFault::FormatOrder { model: m.model.clone(), found: f.format.clone(), listed: name.clone() });
    }
    Ok(())
}

/// One format's shares (accuracies, their intervals, RStd, PIA, PriDe's)
/// in range, and each interval around its estimate.
fn check_shares(report: &SweepReport, m: &ModelSweep, f: &FormatResult) -> Result<(), SweepFault> {
    let (model, format) = (|| m.model.clone(), || f.format.clone());
    // Fractions, or points in a sweep saved before schema 2; Wilson
    // bounds of 0 or n of n can land an ulp outside.
    let top = report.full_share();
    let fraction = |what: &'static str, value: f64| {
        if (-1e-9..=top * (1.0 + 1e-9)).contains(&value) {
            Ok(())
        } else {
            Err(SweepFault::OutOfRange { model: model(), format: format(), what, value, top })
        }
    };
    fraction("accuracy", f.accuracy)?;
    for &r in &f.accuracy_by_rotation {
        fraction("a rotation's accuracy", r)?;
    }
    let intervals =
        [("accuracy_interval", Some(f.accuracy), f.accuracy_interval), ("circular_interval", f.circular_accuracy, f.circular_interval)];
    for (what, estimate, interval) in intervals {
        if let Some((low, high)) = interval {
            fraction(what, low)?;
            fraction(what, high)?;
            // A Wilson interval holds its proportion (to rounding).
            if low > high || estimate.is_some_and(|e| e < low - 1e-9 || e > high + 1e-9) {
                return Err(SweepFault::Interval { model: model(), format: format(), what, low, high });
            }
        }
    }
    f.circular_accuracy.map_or(Ok(()), |c| fraction("circular_accuracy", c))?;
    fraction("rstd", f.rstd)?;
    if let Some(value) = f.pia.filter(|p| !(-1e-9..=1.0 + 1e-9).contains(p)) {
        return Err(SweepFault::Pia { model: model(), format: format(), value });
    }
    if let Some(pride) = &f.pride {
        for (what, value) in [
            ("PriDe's accuracy_before", pride.accuracy_before),
            ("PriDe's accuracy_after", pride.accuracy_after),
            ("PriDe's rstd_before", pride.rstd_before),
            ("PriDe's rstd_after", pride.rstd_after),
        ] {
            fraction(what, value)?;
        }
    }
    Ok(())
}

/// One format's picks: as many positions as options, and as many picks as
/// the tasks (and rotations) scored.
fn check_picks(report: &SweepReport, m: &ModelSweep, f: &FormatResult) -> Result<(), SweepFault> {
    let n = report.tasks as u128;
    // One count per position; every task counted once, or once per rotation with --circular.
    let k = f.picks.len();
    let picked: u128 = f.picks.iter().map(|&p| p as u128).sum();
    let (least, most) = if report.circular { (2 * n, k as u128 * n) } else { (n, n) };
    if !(2..=mcscore_format::MAX_OPTIONS).contains(&k) || f.accuracy_by_rotation.len() > k || !(least..=most).contains(&picked) {
        return Err(SweepFault::Picks {
            model: m.model.clone(),
            format: f.format.clone(),
            picked,
            positions: k,
            rotations: f.accuracy_by_rotation.len(),
            tasks: report.tasks,
            circular: report.circular,
        });
    }
    Ok(())
}

/// A model's spreads across formats, as saved, those of its formats' accuracies.
fn check_spreads(report: &SweepReport, m: &ModelSweep) -> Result<(), SweepFault> {
    let accuracies: Vec<f64> = m.formats.iter().map(|f| f.accuracy).collect();
    let circular: Option<Vec<f64>> = m.formats.iter().map(|f| f.circular_accuracy).collect();
    let saved = std::iter::once((&m.accuracy_across_formats, Some(accuracies)))
        .chain(m.circular_accuracy_across_formats.as_ref().map(|s| (s, circular)));
    for (spread_saved, values) in saved {
        let Some(values) = values else {
            return Err(SweepFault::CircularSpread { model: m.model.clone() });
        };
        let again = spread(&values, &report.formats);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        if ![(again.mean, spread_saved.mean), (again.std, spread_saved.std), (again.min, spread_saved.min), (again.max, spread_saved.max)]
            .iter()
            .all(|&(a, b)| close(a, b))
        {
            return Err(SweepFault::Spread { model: m.model.clone() });
        }
    }
    Ok(())
}

/// Writes a report (or a shard's scores) as pretty JSON to `path`,
/// atomically; `existing` says whether a regular file there may be replaced.
pub fn save(report: &impl Serialize, path: &Path, existing: mcscore_format::Existing) -> Result<(), EvalError> {
    let mut file = AtomicFile::with(path, existing)?;
    serde_json::to_writer_pretty(&mut file, report).map_err(|e| EvalError::Io { path: path.to_owned(), source: e.into() })?;
    file.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_sweeps_without_formats_or_with_other_formats_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sweep = |formats: &[&str], model_formats: usize| {
            let result = |i: usize| serde_json::json!({"format": formats.get(i).unwrap_or(&"f"), "accuracy": 50.0, "circular_accuracy": null, "picks": [1, 1], "rstd": 0.0, "pia": null, "pride": null});
            let spread = serde_json::json!({"mean": 50.0, "std": 0.0, "min": 50.0, "min_format": "f", "max": 50.0, "max_format": "f"});
            serde_json::json!({
                "file": "f.bin", "tasks": 2, "selection": null, "formats": formats, "circular": false, "instruction": false,
                "pride_alpha": null, "items_sha256": "ab", "settings": {},
                "models": [{"model": "m.gguf", "prompts": 2, "tokens_decoded": 1, "tokens_unshared": 1, "scoring_seconds": 1.0,
                    "formats": (0..model_formats).map(result).collect::<Vec<_>>(), "accuracy_across_formats": spread, "circular_accuracy_across_formats": null}],
            })
        };
        let write = |name: &str, value: serde_json::Value| {
            let path = dir.path().join(name);
            std::fs::write(&path, value.to_string()).unwrap();
            path
        };
        let good = write("good.json", sweep(&["upper.dot.newline"], 1));
        assert_eq!(merge_saved(std::slice::from_ref(&good)).unwrap().models.len(), 1);
        for (name, value, why) in [
            ("empty.json", sweep(&[], 0), "0 formats and 1 models"),
            ("short.json", sweep(&["upper.dot.newline", "digit.dot.newline"], 1), "m.gguf has results for 1 formats, the sweep 2"),
        ] {
            let path = write(name, value);
            match merge_saved(&[path]) {
                Err(EvalError::Sweep(SweepError::BadSweep { fault, .. })) => assert!(fault.to_string().contains(why), "{fault}"),
                other => panic!("{name}: {:?}", other.map(|r| r.models.len())),
            }
        }
    }
}
