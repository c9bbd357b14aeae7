//! Education-testing scoring rules applied to a model's option probabilities
//! (docs/methods.md, after "Check the Scoreboard", 2026). The response each rule
//! scores is derived from `p`, the softmax over options of a normalised score.

use serde::Serialize;

/// One task as the schemes see it: option probabilities and the key.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskProbs {
    /// Each option's probability, in option order.
    pub p: Vec<f64>,
    /// The gold option's index.
    pub key: usize,
}

impl TaskProbs {
    /// Softmax of `scores` (stable), with `key` the gold option.
    pub fn from_scores(scores: &[f64], key: usize) -> TaskProbs {
        TaskProbs { p: crate::softmax(scores), key }
    }

    /// The number of options.
    pub fn k(&self) -> usize {
        self.p.len()
    }

    /// The first maximum, as llama-perplexity picks.
    pub fn pick(&self) -> usize {
        crate::first_max(self.p.iter().copied())
    }

    /// The pick's probability: the top-label confidence that calibration
    /// bins and NM's threshold compares.
    pub fn p_max(&self) -> f64 {
        // report builds these from records it checked (Run::check): at least 2 options, so pick indexes p
        self.p[self.pick()]
    }

    /// 1-based rank of the key when options are tried in descending p
    /// (ties in option order).
    pub(crate) fn key_rank(&self) -> usize {
        // the key is a checked record's gold, below its options (Run::check)
        1 + (0..self.k()).filter(|&i| self.p[i] > self.p[self.key] || (self.p[i] == self.p[self.key] && i < self.key)).count()
    }
}

/// The scoring rules, with their thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum Scheme {
    /// Number right.
    Nr,
    /// Negative marking: abstain unless p_max > τ (`None`: 1/k).
    Nm {
        /// The confidence p_max must exceed to answer.
        tau: Option<f64>,
    },
    /// Elimination: eliminate options with p < ε (`None`: 1/k).
    Elim {
        /// The probability below which an option is eliminated.
        epsilon: Option<f64>,
    },
    /// Elimination with a penalty of k − 1 when the key is eliminated.
    ElimNm {
        /// The probability below which an option is eliminated.
        epsilon: Option<f64>,
    },
    /// Confidence-based marking (Gardner-Medwin).
    Cbm,
    /// Point allocation: 1 − Brier/2.
    Ppa,
    /// Answer until correct.
    Auc,
}

impl Scheme {
    /// Every rule, thresholds at their 1/k default, in the order reports
    /// list them.
    pub const DEFAULTS: [Scheme; 7] = [
        Scheme::Nr,
        Scheme::Nm { tau: None },
        Scheme::Elim { epsilon: None },
        Scheme::ElimNm { epsilon: None },
        Scheme::Cbm,
        Scheme::Ppa,
        Scheme::Auc,
    ];

    /// The rule's short name, as reports print it (`NR`, `Elim-NM`, …).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Nr => "NR",
            Scheme::Nm { .. } => "NM",
            Scheme::Elim { .. } => "Elim",
            Scheme::ElimNm { .. } => "Elim-NM",
            Scheme::Cbm => "CBM",
            Scheme::Ppa => "PPA",
            Scheme::Auc => "AUC",
        }
    }

    /// The task's score under this rule, for the response the rule derives
    /// from `p` ([`Scheme::respond`]).
    pub fn score(self, t: &TaskProbs) -> f64 {
        self.score_response(&self.respond(t), t.key, t.k())
    }

    /// The response this rule's mode would give, derived from `p`: the
    /// log-probability version of each prompted mode.
    pub fn respond(self, t: &TaskProbs) -> Response {
        match self {
            Scheme::Nr => Response::Pick(t.pick()),
            Scheme::Nm { tau } => {
                if t.p_max() > tau.unwrap_or(1.0 / t.k() as f64) {
                    Response::Pick(t.pick())
                } else {
                    Response::Abstain
                }
            }
            Scheme::Elim { epsilon } | Scheme::ElimNm { epsilon } => {
                let epsilon = epsilon.unwrap_or(1.0 / t.k() as f64);
                Response::Eliminate((0..t.k()).filter(|&i| t.p[i] < epsilon).collect())
            }
            Scheme::Cbm => Response::Confident { pick: t.pick(), level: confidence_level(t.p_max()) },
            Scheme::Ppa => Response::Allocate(t.p.clone()),
            Scheme::Auc => Response::Attempts(t.key_rank()),
        }
    }

    /// The score of `response` to a task of `k` options whose key is `key`,
    /// as the paper states the rule. A response the rule cannot read (one
    /// that did not parse, or another mode's) is scored as a wrong answer
    /// that claims the least: NR 0, NM −1/(k−1), Elim 0 and Elim-NM −1 (the
    /// key alone eliminated), CBM 0 (wrong at level 1), PPA 0 (all mass on
    /// a distractor), AUC 0 (the key found last).
    pub fn score_response(self, response: &Response, key: usize, k: usize) -> f64 {
        let kf = k as f64;
        match (self, response) {
            (Scheme::Nr, Response::Pick(pick)) => f64::from(u8::from(*pick == key)),
            (Scheme::Nr, _) => 0.0,
            (Scheme::Nm { .. }, Response::Pick(pick)) if *pick == key => 1.0,
            (Scheme::Nm { .. }, Response::Abstain) => 0.0,
            (Scheme::Nm { .. }, _) => -1.0 / (kf - 1.0),
            (Scheme::Elim { .. } | Scheme::ElimNm { .. }, response) => {
                let (distractors, key_out) = match response {
                    Response::Eliminate(out) => (out.iter().filter(|&&i| i != key && i < k).count(), out.contains(&key)),
                    _ => (0, true),
                };
                let penalty = matches!(self, Scheme::ElimNm { .. });
                match (key_out, penalty) {
                    (true, false) => 0.0,
                    (true, true) => (distractors as f64 - (kf - 1.0)) / (kf - 1.0),
                    (false, _) => distractors as f64 / (kf - 1.0),
                }
            }
            (Scheme::Cbm, Response::Confident { pick, level }) => match (*pick == key, level) {
                (true, l) => f64::from(*l),
                (false, 1) => 0.0,
                (false, 2) => -2.0,
                (false, _) => -6.0,
            },
            (Scheme::Cbm, _) => 0.0,
            (Scheme::Ppa, Response::Allocate(p)) if p.len() == k => 1.0 - brier_of(p, key) / 2.0,
            (Scheme::Ppa, _) => 0.0,
            (Scheme::Auc, Response::Attempts(a)) => (kf - (*a).clamp(1, k) as f64) / (kf - 1.0),
            (Scheme::Auc, _) => 0.0,
        }
    }
}

/// What a model answered under a response mode, in the form its rule scores.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// One option chosen (NR, NM), by index.
    Pick(usize),
    /// NM: no answer.
    Abstain,
    /// Elim, Elim-NM: the options eliminated, by index, ascending, each once.
    Eliminate(Vec<usize>),
    /// CBM: an answer and a confidence level, 1 to 3.
    Confident {
        /// The option chosen.
        pick: usize,
        /// The confidence level.
        level: u8,
    },
    /// PPA: a probability for every option, in option order.
    Allocate(Vec<f64>),
    /// AUC: the attempt (from 1) at which the key was chosen; k where every
    /// attempt allowed (k − 1) missed it.
    Attempts(usize),
    /// A response that did not parse.
    Unparsed,
}

/// Distractors eliminated (p < ε) and whether the key was.
pub fn eliminated(t: &TaskProbs, epsilon: Option<f64>) -> (usize, bool) {
    let epsilon = epsilon.unwrap_or(1.0 / t.k() as f64);
    // the key is a checked record's gold, below its options (Run::check)
    let out = |i: usize| t.p[i] < epsilon;
    ((0..t.k()).filter(|&i| i != t.key && out(i)).count(), out(t.key))
}

/// CBM's confidence level: 1 below 2/3, 2 below 0.8, else 3.
pub(crate) fn confidence_level(p_max: f64) -> u8 {
    if p_max < 2.0 / 3.0 {
        1
    } else if p_max < 0.8 {
        2
    } else {
        3
    }
}

/// Multi-class Brier score Σ_i (p_i − y_i)², in [0, 2].
pub fn brier(t: &TaskProbs) -> f64 {
    brier_of(&t.p, t.key)
}

/// The Brier score of the probabilities `p` against the key `key`.
fn brier_of(p: &[f64], key: usize) -> f64 {
    p.iter().enumerate().map(|(i, &p)| (p - f64::from(u8::from(i == key))).powi(2)).sum()
}

/// What each rule's score hides: the behaviour behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Behaviour {
    /// NM: share of tasks abstained on.
    pub abstention_rate: f64,
    /// Elim: mean options eliminated per task.
    pub mean_eliminated: f64,
    /// Elim: share of tasks whose key was eliminated.
    pub key_eliminated_rate: f64,
    /// CBM: share of tasks at confidence 1, 2, 3.
    pub confidence_histogram: [f64; 3],
    /// AUC: mean attempts until correct.
    pub mean_attempts: f64,
    /// Consistency: share of tasks where NR's pick survives elimination.
    pub pick_not_eliminated_rate: f64,
    /// Consistency: share of tasks where NR's pick holds the largest PPA mass.
    pub pick_holds_max_mass_rate: f64,
}

impl Behaviour {
    /// The behaviour behind NM (threshold `tau`) and Elim (threshold
    /// `epsilon`), each 1/k where `None`, as the schemes score them.
    pub fn of(tasks: &[TaskProbs], tau: Option<f64>, epsilon: Option<f64>) -> Behaviour {
        let n = tasks.len().max(1) as f64;
        let rate = |f: &dyn Fn(&TaskProbs) -> bool| tasks.iter().filter(|t| f(t)).count() as f64 / n;
        let mut histogram = [0.0; 3];
        for t in tasks {
            histogram[usize::from(confidence_level(t.p_max())) - 1] += 1.0 / n;
        }
        Behaviour {
            abstention_rate: rate(&|t| t.p_max() <= tau.unwrap_or(1.0 / t.k() as f64)),
            mean_eliminated: tasks
                .iter()
                .map(|t| {
                    let (d, k) = eliminated(t, epsilon);
                    d + usize::from(k)
                })
                .sum::<usize>() as f64
                / n,
            key_eliminated_rate: rate(&|t| eliminated(t, epsilon).1),
            confidence_histogram: histogram,
            mean_attempts: tasks.iter().map(|t| t.key_rank() as f64).sum::<f64>() / n,
            pick_not_eliminated_rate: rate(&|t| t.p[t.pick()] >= epsilon.unwrap_or(1.0 / t.k() as f64)),
            pick_holds_max_mass_rate: rate(&|t| t.p.iter().all(|&p| p <= t.p[t.pick()])),
        }
    }
}
