//! `--normalisation`, as `report` and `compare` take it.

use mcscore_metrics::Normalisation;

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum NormArg {
    Acc,
    AccNorm,
    AccChar,
    AccByte,
    /// Needs logs of `score --pmi`.
    AccPmi,
}

impl From<NormArg> for Normalisation {
    fn from(n: NormArg) -> Self {
        match n {
            NormArg::Acc => Normalisation::Acc,
            NormArg::AccNorm => Normalisation::AccNorm,
            NormArg::AccChar => Normalisation::AccChar,
            NormArg::AccByte => Normalisation::AccByte,
            NormArg::AccPmi => Normalisation::AccPmi,
        }
    }
}
