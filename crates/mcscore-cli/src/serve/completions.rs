//! The OpenAI completions API, as far as scoring needs it: requests checked
//! field by field, prompts tokenised with the model's BOS rule, and answers
//! with per-token log-probabilities (`echo`) in the shape that
//! lm-evaluation-harness (`local-completions`, `gguf`) and OpenAI's clients
//! parse. Generation stops at one greedy token. The queue that packs requests
//! into the engine's fills is [`super::queue`]; HTTP is the front end's.

use std::sync::Arc;

use mcscore_datasets::json::{duplicate_key, Unique};
use mcscore_engine::{Engine, PromptRequest, RowScores};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most top log-probabilities a row reports (`logprobs`).
pub(crate) const MAX_TOP_LOGPROBS: usize = 20;

/// What one request may ask for, so that no request (a few MB of JSON can
/// name a million one-token prompts) makes the server hold more than a
/// bounded answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Prompts in one request.
    pub prompts: usize,
    /// Prompt tokens in one request (BOS the server adds included).
    pub tokens: usize,
    /// Log-probabilities in one answer: per row read, one for the token and
    /// one per top alternative (`logprobs`).
    pub answer_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { prompts: 1024, tokens: 1 << 20, answer_entries: 1 << 21 }
    }
}

/// A refused request, with what OpenAI's error body carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// The HTTP status: 400 for a bad field, 404 for an unknown model, 401,
    /// 413, 503 from the front end.
    pub status: u16,
    pub message: String,
    /// The request field at fault.
    pub param: Option<String>,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, ….
    pub kind: &'static str,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub(crate) fn invalid(param: &str, message: impl Into<String>) -> ApiError {
        ApiError { status: 400, message: message.into(), param: Some(param.to_owned()), kind: "invalid_request_error", code: None }
    }

    /// A request over one of the server's [`Limits`]: 413.
    pub(crate) fn too_large(param: &str, message: impl Into<String>) -> ApiError {
        ApiError { status: 413, code: Some("request_too_large"), ..ApiError::invalid(param, message) }
    }

    /// OpenAI's error body: `{"error": {"message", "type", "param", "code"}}`.
    pub(crate) fn body(&self) -> Value {
        serde_json::json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}})
    }
}

/// A prompt as the request gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Prompt {
    Text(String),
    Tokens(Vec<u32>),
}

/// A checked completion request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub(crate) struct CompletionRequest {
    prompts: Vec<Prompt>,
    echo: bool,
    /// Top log-probabilities per token; `None`: no `logprobs` in the answer.
    logprobs: Option<usize>,
    /// 0 or 1.
    max_tokens: usize,
    stop: Vec<String>,
}

/// A completion request's body as OpenAI defines it: the fields this server
/// reads, and those a client may send that change nothing here, each typed,
/// so that a value of the wrong type is refused by name. A field absent and
/// a field `null` read the same.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompletionBody {
    model: Option<String>,
    /// Its shapes are told apart by [`parse_prompts`], which names the item at fault.
    prompt: Option<Value>,
    echo: Option<bool>,
    logprobs: Option<u64>,
    max_tokens: Option<u64>,
    stop: Option<Stop>,
    n: Option<f64>,
    best_of: Option<f64>,
    stream: Option<bool>,
    temperature: Option<f64>,
    suffix: Option<String>,
    // Accepted and checked for type; they change nothing in a scoring server.
    #[serde(rename = "seed")]
    _seed: Option<i64>,
    #[serde(rename = "user")]
    _user: Option<String>,
    #[serde(rename = "top_p")]
    _top_p: Option<f64>,
    #[serde(rename = "top_k")]
    _top_k: Option<i64>,
    #[serde(rename = "min_p")]
    _min_p: Option<f64>,
    #[serde(rename = "presence_penalty")]
    _presence_penalty: Option<f64>,
    #[serde(rename = "frequency_penalty")]
    _frequency_penalty: Option<f64>,
    #[serde(rename = "repeat_penalty")]
    _repeat_penalty: Option<f64>,
    #[serde(rename = "logit_bias")]
    _logit_bias: Option<std::collections::BTreeMap<String, f64>>,
    #[serde(rename = "stream_options")]
    _stream_options: Option<Map<String, Value>>,
}

/// `stop`: one string or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

/// What each typed field allows, for the message that refuses a value of
/// another type.
fn allowed(field: &str) -> Option<String> {
    let text = match field {
        "model" | "user" | "prompt" => "a string",
        "echo" | "stream" | "add_special_tokens" => "true or false",
        "logprobs" => return Some(format!("a whole number from 0 to {MAX_TOP_LOGPROBS}")),
        "max_tokens" => "0 or 1",
        "stop" => "a string or a list of strings",
        "n" | "best_of" => "1",
        "temperature" => "a number",
        "suffix" => "absent: this server does not insert text after the completion",
        "seed" | "top_k" => "a whole number",
        "tokens" => "a list of token ids",
        "logit_bias" => "an object of token ids and numbers",
        "stream_options" => "an object",
        _ => return None,
    };
    Some(text.to_owned())
}

/// Reads a body into `T`: a JSON object whose keys are each given once,
/// whose fields are all known to `T` and of its types, each refusal naming
/// the field at fault.
fn typed<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let fields = object(body)?;
    serde_path_to_error::deserialize(Value::Object(fields)).map_err(|e| {
        let inner = e.inner().to_string();
        // An unknown field fails before its path is entered: serde names it.
        if let Some(field) = inner.strip_prefix("unknown field `").and_then(|r| r.split('`').next()) {
            return ApiError::invalid(field, inner.clone());
        }
        let path = e.path().to_string();
        let field = path.split(['.', '[']).next().unwrap_or("body").to_owned();
        match allowed(&field) {
            Some(allowed) => ApiError::invalid(&field, format!("{path} must be {allowed}: {inner}")),
            None => ApiError::invalid(&field, format!("{path}: {inner}")),
        }
    })
}

impl CompletionRequest {
    /// Reads a JSON body, refusing what this server would not honour, each
    /// refusal naming its field and what is allowed. `model` must name the
    /// served model (or be absent).
    pub(crate) fn parse(body: &[u8], served: &ModelInfo, limits: &Limits) -> Result<CompletionRequest, ApiError> {
        let body: CompletionBody = typed(body)?;
        if let Some(name) = &body.model {
            if *name != served.id {
                return Err(ApiError {
                    status: 404,
                    message: format!("model `{name}` is not served here; this server serves `{}` (GET /v1/models)", served.id),
                    param: Some("model".into()),
                    kind: "invalid_request_error",
                    code: Some("model_not_found"),
                });
            }
        }
        let prompts = parse_prompts(body.prompt.as_ref().ok_or_else(|| ApiError::invalid("prompt", "prompt is required"))?)?;
        if prompts.len() > limits.prompts {
            return Err(ApiError::too_large(
                "prompt",
                format!(
                    "{} prompts in one request; this server takes at most {} (--max-prompts): send them in several requests",
                    prompts.len(),
                    limits.prompts
                ),
            ));
        }
        let logprobs = match body.logprobs {
            Some(n) if n > MAX_TOP_LOGPROBS as u64 => {
                return Err(ApiError::invalid(
                    "logprobs",
                    format!("logprobs is {n}; this server reports at most {MAX_TOP_LOGPROBS} top log-probabilities per token"),
                ))
            }
            n => n.map(|n| n as usize),
        };
        // OpenAI's default is 16 tokens; this server generates at most one.
        let max_tokens = match body.max_tokens {
            None => return Err(ApiError::invalid(
                "max_tokens",
                "max_tokens is absent, which OpenAI reads as 16; this server generates at most 1 token greedily: send max_tokens 0 or 1",
            )),
            Some(n @ (0 | 1)) => n as usize,
            Some(n) => {
                return Err(ApiError::invalid(
                    "max_tokens",
                    format!(
                    "max_tokens is {n}; this server generates at most 1 token greedily (0 or 1); it does not truncate longer generations"
                ),
                ))
            }
        };
        for (field, value) in [("n", body.n), ("best_of", body.best_of)] {
            if let Some(v) = value.filter(|&v| v != 1.0) {
                return Err(ApiError::invalid(field, format!("{field} is {v}; this server returns one choice per prompt ({field} 1)")));
            }
        }
        if body.stream == Some(true) {
            return Err(ApiError::invalid("stream", "stream is true; this server answers in one body (stream false)"));
        }
        if let Some(t) = body.temperature.filter(|&t| t != 0.0 && max_tokens > 0) {
            return Err(ApiError::invalid("temperature", format!("temperature is {t}; this server generates greedily (temperature 0)")));
        }
        if let Some(s) = &body.suffix {
            return Err(ApiError::invalid("suffix", format!("suffix is {s:?}; this server does not insert text after the completion")));
        }
        let stop = match body.stop {
            None => Vec::new(),
            Some(Stop::One(s)) => vec![s],
            Some(Stop::Many(list)) => list,
        };
        if stop.iter().any(String::is_empty) {
            return Err(ApiError::invalid("stop", "stop holds an empty string, which would stop before any text; leave it out"));
        }
        Ok(CompletionRequest { prompts, echo: body.echo.unwrap_or(false), logprobs, max_tokens, stop })
    }

    /// Prompts in the request.
    pub(crate) fn len(&self) -> usize {
        self.prompts.len()
    }
}

const PROMPT_SHAPES: &str = "a string, a list of strings, a list of token ids or a list of lists of token ids";

fn parse_prompts(value: &Value) -> Result<Vec<Prompt>, ApiError> {
    let bad = |message: String| ApiError::invalid("prompt", message);
    let ids = |items: &[Value], at: &str| -> Result<Vec<u32>, ApiError> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_u64()
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| bad(format!("{at}token {i} is {v}; a token id is a whole number from 0 to the vocabulary size − 1")))
            })
            .collect()
    };
    let prompts = match value {
        Value::String(s) => vec![Prompt::Text(s.clone())],
        Value::Array(items) if items.is_empty() => return Err(bad("prompt is an empty list".into())),
        // an empty list returned above
        Value::Array(items) => match &items[0] {
            Value::String(_) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str().map(|s| Prompt::Text(s.to_owned())).ok_or_else(|| bad(format!("prompt {i} is {v}, in a list of strings")))
                })
                .collect::<Result<_, _>>()?,
            Value::Number(_) => vec![Prompt::Tokens(ids(items, "")?)],
            Value::Array(_) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Array(inner) => ids(inner, &format!("prompt {i}: ")).map(Prompt::Tokens),
                    other => Err(bad(format!("prompt {i} is {other}, in a list of token lists"))),
                })
                .collect::<Result<_, _>>()?,
            other => return Err(bad(format!("prompt must be {PROMPT_SHAPES}; its first item is {other}"))),
        },
        other => return Err(bad(format!("prompt must be {PROMPT_SHAPES}, not {other}"))),
    };
    Ok(prompts)
}

/// `POST /tokenize`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenizeBody {
    prompt: String,
    add_special_tokens: Option<bool>,
    #[serde(rename = "model")]
    _model: Option<String>,
}

/// `POST /detokenize`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DetokenizeBody {
    tokens: Vec<u32>,
    #[serde(rename = "model")]
    _model: Option<String>,
}

/// What `GET /v1/models` says about the served model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelInfo {
    pub id: String,
    pub created: u64,
}

/// The served model's tokenizer and the completions built on it: shared by
/// every request handler (tokenising is cheap and thread-safe).
#[non_exhaustive]
pub(crate) struct Completions {
    engine: Arc<Engine>,
    pub model: ModelInfo,
    max_prompt: usize,
    pub limits: Limits,
}

/// A prompt ready for the engine, with what its answer needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct PreparedPrompt {
    pub request: PromptRequest,
    /// Whether the model's BOS was put before the prompt (and is not echoed).
    implicit_bos: bool,
    /// The prompt's text, for `text` with `echo`.
    text: String,
}

/// A checked request, tokenised.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub(crate) struct CompletionJob {
    pub prompts: Vec<PreparedPrompt>,
    echo: bool,
    logprobs: Option<usize>,
    max_tokens: usize,
    stop: Vec<String>,
}

impl CompletionJob {
    /// Tokens the model reads for this request (implicit BOS included).
    pub(crate) fn prompt_tokens(&self) -> usize {
        self.prompts.iter().map(|p| p.request.tokens.len()).sum()
    }
}

/// One completion choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub(crate) struct Choice {
    pub text: String,
    pub index: usize,
    pub logprobs: Option<Logprobs>,
    pub finish_reason: &'static str,
}

/// OpenAI's legacy `logprobs` object: one entry per echoed prompt token,
/// then per generated token.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub(crate) struct Logprobs {
    pub tokens: Vec<String>,
    pub token_logprobs: Vec<Option<f64>>,
    pub top_logprobs: Vec<Option<TopLogprobs>>,
    pub text_offset: Vec<usize>,
}

/// One row's likeliest tokens, likeliest first, written as OpenAI's
/// `{token: logprob}` object (kept as pairs: a million rows of JSON maps
/// would take gigabytes).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TopLogprobs(pub Vec<(String, f64)>);

impl Serialize for TopLogprobs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (token, logprob) in &self.0 {
            map.serialize_entry(token, logprob)?;
        }
        map.end()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub(crate) struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
}

/// The body of a completion answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub(crate) struct CompletionResponse {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<Choice>,
    pub usage: Usage,
}

impl Completions {
    /// `max_prompt`: the longest prompt the engine session takes, in tokens
    /// (an implicit BOS included).
    pub(crate) fn new(engine: Arc<Engine>, model: ModelInfo, max_prompt: usize, limits: Limits) -> Completions {
        Completions { engine, model, max_prompt, limits }
    }

    /// Tokenises a request's prompts. Where the model's tokenizer adds a BOS
    /// and a prompt does not start with it, the prompt is read after a BOS
    /// that is not echoed: lm-eval's token prompts come without one (its
    /// remote tokenizer asks for none), and a model like Gemma scores poorly
    /// without it. Each prompt's first echoed token then has a
    /// log-probability; where nothing precedes it, `null`.
    pub(crate) fn prepare(&self, request: CompletionRequest) -> Result<CompletionJob, ApiError> {
        let n_vocab = self.engine.n_vocab();
        let bos = self.engine.bos();
        let mut prompts = Vec::with_capacity(request.prompts.len());
        let (mut tokens_in_all, mut entries) = (0usize, 0usize);
        let per_row = 1 + request.logprobs.unwrap_or(0);
        for (i, prompt) in request.prompts.into_iter().enumerate() {
            let (mut tokens, text) = match prompt {
                Prompt::Text(text) => {
                    let tokens = self.engine.tokenize(&text).map_err(|e| ApiError::too_large("prompt", format!("prompt {i}: {e}")))?;
                    (tokens, Some(text))
                }
                Prompt::Tokens(tokens) => {
                    if let Some((at, &id)) = tokens.iter().enumerate().find(|(_, &t)| t >= n_vocab) {
                        return Err(ApiError::invalid(
                            "prompt",
                            format!("prompt {i}: token {at} is {id}, outside the vocabulary (ids 0 to {})", n_vocab.saturating_sub(1)),
                        ));
                    }
                    (tokens, None)
                }
            };
            if tokens.is_empty() {
                return Err(ApiError::invalid("prompt", format!("prompt {i} is empty; there is nothing to score")));
            }
            // an empty prompt returned above
            let implicit_bos = bos.is_some_and(|b| tokens[0] != b);
            if let Some(b) = bos.filter(|_| implicit_bos) {
                tokens.insert(0, b);
            }
            if tokens.len() > self.max_prompt {
                return Err(ApiError::invalid(
                    "prompt",
                    format!(
                        "prompt {i} has {} tokens{}; this server's context (-c) takes at most {}",
                        tokens.len(),
                        if implicit_bos { " with its BOS" } else { "" },
                        self.max_prompt
                    ),
                ));
            }
            let n = tokens.len();
            tokens_in_all += n;
            if tokens_in_all > self.limits.tokens {
                return Err(ApiError::too_large(
                    "prompt",
                    format!(
                        "the prompts hold more than {} tokens in all (--max-request-tokens): send them in several requests",
                        self.limits.tokens
                    ),
                ));
            }
            entries += (if request.echo { n } else { 0 } + request.max_tokens) * per_row;
            if entries > self.limits.answer_entries {
                return Err(ApiError::too_large(
                    "prompt",
                    format!(
                        "the answer would hold more than {} log-probabilities (tokens echoed × (1 + logprobs)); send fewer prompts, or a smaller logprobs, per request",
                        self.limits.answer_entries
                    ),
                ));
            }
            // n >= 1: an empty prompt returned above
            let first = if request.echo { 0 } else { n - 1 };
            let rows = first..if request.max_tokens == 1 { n } else { n - 1 };
            let rows = rows.start.min(rows.end)..rows.end;
            let text = match text {
                Some(text) => text,
                None => String::from_utf8_lossy(&self.engine.detokenize(&tokens[usize::from(implicit_bos)..])).into_owned(),
            };
            prompts.push(PreparedPrompt {
                request: PromptRequest { tokens, rows, top: request.logprobs.unwrap_or(0) },
                implicit_bos,
                text,
            });
        }
        Ok(CompletionJob { prompts, echo: request.echo, logprobs: request.logprobs, max_tokens: request.max_tokens, stop: request.stop })
    }

    /// Builds the answer from the rows the engine read for each prompt.
    pub(crate) fn respond(&self, id: String, created: u64, job: &CompletionJob, rows: &[Vec<RowScores>]) -> CompletionResponse {
        let mut choices = Vec::with_capacity(job.prompts.len());
        let mut completion_tokens = 0;
        for (index, (prompt, rows)) in job.prompts.iter().zip(rows).enumerate() {
            let request = &prompt.request;
            let skip = usize::from(prompt.implicit_bos);
            // Row r (at position rows.start + r) predicts token rows.start + r + 1.
            let row_for =
                |position: usize| position.checked_sub(1).and_then(|p| p.checked_sub(request.rows.start)).and_then(|r| rows.get(r));
            let mut logprobs =
                Logprobs { tokens: Vec::new(), token_logprobs: Vec::new(), top_logprobs: Vec::new(), text_offset: Vec::new() };
            let mut text = String::new();
            let mut chars = 0;
            if job.echo {
                for position in skip..request.tokens.len() {
                    let piece = self.engine.piece(request.tokens[position]);
                    let row = row_for(position);
                    logprobs.tokens.push(String::from_utf8_lossy(&piece).into_owned());
                    logprobs.token_logprobs.push(row.and_then(|r| r.next));
                    logprobs.top_logprobs.push(row.map(|r| self.top_map(r, job.logprobs.unwrap_or(0))));
                    logprobs.text_offset.push(chars);
                    chars += char_starts(&piece);
                }
                text.push_str(&prompt.text);
            } else {
                chars = prompt.text.chars().count();
            }
            let mut finish_reason = "length";
            if job.max_tokens == 1 {
                let row = rows.last().expect("a generating prompt reads its last row");
                // the engine refuses a row with no likeliest token (NonFinitePrompt)
                let (token, logprob) = row.top[0];
                let piece = String::from_utf8_lossy(&self.engine.piece(token)).into_owned();
                completion_tokens += 1;
                let mut generated = piece.clone();
                if let Some(cut) = job.stop.iter().filter_map(|s| generated.find(s.as_str())).min() {
                    generated.truncate(cut);
                    finish_reason = "stop";
                } else if self.engine.is_end_of_generation(token) {
                    generated.clear();
                    finish_reason = "stop";
                }
                logprobs.tokens.push(piece);
                logprobs.token_logprobs.push(Some(logprob));
                logprobs.top_logprobs.push(Some(self.top_map(row, job.logprobs.unwrap_or(0))));
                logprobs.text_offset.push(chars);
                text.push_str(&generated);
            }
            choices.push(Choice { text, index, logprobs: job.logprobs.map(|_| logprobs), finish_reason });
        }
        let prompt_tokens = job.prompt_tokens();
        CompletionResponse {
            id,
            object: "text_completion",
            created,
            model: self.model.id.clone(),
            choices,
            usage: Usage { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
        }
    }

    fn top_map(&self, row: &RowScores, n: usize) -> TopLogprobs {
        let mut top: Vec<(String, f64)> = Vec::with_capacity(n);
        for &(token, logprob) in row.top.iter().take(n) {
            let piece = String::from_utf8_lossy(&self.engine.piece(token)).into_owned();
            // Two tokens may print alike; a JSON object holds one: the likelier.
            if !top.iter().any(|(p, _)| *p == piece) {
                top.push((piece, logprob));
            }
        }
        TopLogprobs(top)
    }

    /// `POST /tokenize`: `{"prompt": TEXT, "add_special_tokens": true}` →
    /// `{"tokens", "count", "max_model_len"}` (vLLM's shape, which
    /// lm-eval's remote tokenizer reads). Special tokens written in the text
    /// are read as such, so `<bos>` gives the BOS id.
    pub(crate) fn tokenize(&self, body: &[u8]) -> Result<Value, ApiError> {
        let body: TokenizeBody = typed(body)?;
        let mut tokens = self.engine.tokenize(&body.prompt).map_err(|e| ApiError::too_large("prompt", e.to_string()))?;
        if let Some(bos) = self.engine.bos().filter(|_| body.add_special_tokens.unwrap_or(true)) {
            tokens.insert(0, bos);
        }
        Ok(serde_json::json!({"tokens": tokens, "count": tokens.len(), "max_model_len": self.max_prompt}))
    }

    /// `POST /detokenize`: `{"tokens": [ids]}` → `{"prompt": TEXT}`.
    pub(crate) fn detokenize(&self, body: &[u8]) -> Result<Value, ApiError> {
        let body: DetokenizeBody = typed(body)?;
        let n_vocab = self.engine.n_vocab();
        if let Some((i, t)) = body.tokens.iter().enumerate().find(|(_, &t)| t >= n_vocab) {
            return Err(ApiError::invalid(
                "tokens",
                format!("token {i} is {t}; ids are whole numbers from 0 to {}", n_vocab.saturating_sub(1)),
            ));
        }
        Ok(serde_json::json!({"prompt": String::from_utf8_lossy(&self.engine.detokenize(&body.tokens))}))
    }

    /// `GET /tokenizer_info`: the special tokens as text (lm-eval's remote
    /// tokenizer tokenises them to find their ids), the BOS rule, and the
    /// GGUF's chat template (`null` without one), which lm-eval's
    /// `--apply_chat_template` renders before it sends a prompt.
    pub(crate) fn tokenizer_info(&self) -> Value {
        let (bos, eos) = self.engine.special_tokens();
        let (bos_text, eos_text) = self.engine.special_texts();
        serde_json::json!({
            "tokenizer_class": "llama.cpp (GGUF)",
            "bos_token": bos_text,
            "eos_token": eos_text,
            "bos_token_id": bos,
            "eos_token_id": eos,
            "add_bos_token": self.engine.bos().is_some(),
            "model_max_length": self.max_prompt,
            "vocab_size": self.engine.n_vocab(),
            "chat_template": self.engine.chat_template().ok().flatten(),
        })
    }

    /// `GET /v1/models`.
    pub(crate) fn models(&self) -> Value {
        serde_json::json!({"object": "list", "data": [{"id": self.model.id, "object": "model", "created": self.model.created, "owned_by": "mcscore"}]})
    }
}

/// Characters that start in `bytes` (bytes that are not UTF-8 continuation
/// bytes): a character split across two tokens counts in the first.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Unique>(body) {
        Ok(Unique(Value::Object(fields))) => Ok(fields),
        Ok(_) => Err(ApiError::invalid("body", "the body must be a JSON object")),
        Err(e) => match duplicate_key(&e) {
            Some((key, at)) => Err(ApiError::invalid(
                &key,
                format!("the body gives the key {} twice (at {at}): send each key once", serde_json::Value::from(key.as_str())),
            )),
            None => Err(ApiError::invalid("body", format!("the body is not valid JSON: {e}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> ModelInfo {
        ModelInfo { id: "gemma".into(), created: 0 }
    }

    fn parse(body: &str) -> Result<CompletionRequest, ApiError> {
        CompletionRequest::parse(body.as_bytes(), &served(), &Limits::default())
    }

    #[test]
    fn every_prompt_shape_is_read() {
        let r = parse(r#"{"prompt": "a b", "max_tokens": 1, "echo": true, "logprobs": 1}"#).unwrap();
        assert_eq!(r.prompts, vec![Prompt::Text("a b".into())]);
        assert!(r.echo);
        assert_eq!(r.logprobs, Some(1));
        let r = parse(r#"{"prompt": ["a", "b"], "max_tokens": 0}"#).unwrap();
        assert_eq!(r.len(), 2);
        let r = parse(r#"{"prompt": [1, 2, 3], "max_tokens": 0}"#).unwrap();
        assert_eq!(r.prompts, vec![Prompt::Tokens(vec![1, 2, 3])]);
        let r = parse(r#"{"prompt": [[1, 2], [3]], "max_tokens": 0, "model": "gemma", "seed": 1234, "temperature": 0}"#).unwrap();
        assert_eq!(r.prompts, vec![Prompt::Tokens(vec![1, 2]), Prompt::Tokens(vec![3])]);
    }

    #[test]
    fn a_key_given_twice_is_refused_by_name_at_any_depth() {
        for (body, key) in [
            (r#"{"prompt": "a", "max_tokens": 0, "prompt": "b"}"#, "prompt"),
            (r#"{"prompt": "a", "max_tokens": 0, "logit_bias": {"7": 1, "7": 2}}"#, "7"),
            (r#"{"prompt": "a", "max_tokens": 0, "a\"b": 1, "a\"b": 2}"#, "a\"b"),
        ] {
            let error = parse(body).unwrap_err();
            assert_eq!((error.status, error.param.as_deref()), (400, Some(key)), "{body}: {}", error.message);
            assert!(error.message.contains("twice (at line 1 column"), "{}", error.message);
        }
        // Equal values in different objects are not duplicates.
        parse(r#"{"prompt": "a", "max_tokens": 0, "echo": false}"#).unwrap();
    }

    #[test]
    fn refusals_name_their_field() {
        let cases = [
            (r#"{"prompt": "a", "max_tokens": 2}"#, "max_tokens", 400),
            (r#"{"prompt": "a"}"#, "max_tokens", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "n": 2}"#, "n", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "logprobs": 21}"#, "logprobs", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "temperature": 0.7}"#, "temperature", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "stream": true}"#, "stream", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "frobnicate": 1}"#, "frobnicate", 400),
            (r#"{"prompt": [1, -2], "max_tokens": 1}"#, "prompt", 400),
            (r#"{"prompt": [], "max_tokens": 1}"#, "prompt", 400),
            (r#"{"prompt": [[1], "a"], "max_tokens": 1}"#, "prompt", 400),
            (r#"{"prompt": 5, "max_tokens": 1}"#, "prompt", 400),
            (r#"{"max_tokens": 1}"#, "prompt", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "model": "gpt-4"}"#, "model", 404),
            (r#"{"prompt": "a", "max_tokens": 1,"#, "body", 400),
            (r#"[1]"#, "body", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "stop": ""}"#, "stop", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "stop": ["x", ""]}"#, "stop", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "stop": ["x", 3]}"#, "stop", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "echo": "yes"}"#, "echo", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "logprobs": -1}"#, "logprobs", 400),
            (r#"{"prompt": "a", "max_tokens": 1.5}"#, "max_tokens", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "seed": "x"}"#, "seed", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "logit_bias": {"7": "up"}}"#, "logit_bias", 400),
            (r#"{"prompt": "a", "max_tokens": 1, "suffix": "b"}"#, "suffix", 400),
        ];
        for (body, param, status) in cases {
            let error = parse(body).unwrap_err();
            assert_eq!((error.param.as_deref(), error.status), (Some(param), status), "{body}: {error:?}");
            assert_eq!(error.body()["error"]["param"], param);
        }
    }

    #[test]
    fn a_value_of_another_type_is_refused_with_what_its_field_allows() {
        let error = parse(r#"{"prompt": "a", "max_tokens": 1, "logprobs": -1}"#).unwrap_err();
        assert!(
            error.message.starts_with("logprobs must be a whole number from 0 to 20: invalid value: integer `-1`"),
            "{}",
            error.message
        );
        let error = parse(r#"{"prompt": "a", "max_tokens": 1, "frobnicate": 1}"#).unwrap_err();
        assert!(error.message.starts_with("unknown field `frobnicate`, expected one of `model`, `prompt`"), "{}", error.message);
        let error = parse(r#"{"prompt": "a", "max_tokens": 1, "logit_bias": {"7": "up"}}"#).unwrap_err();
        assert!(
            error.message.starts_with("logit_bias.7 must be an object of token ids and numbers: invalid type: string"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_request_of_more_prompts_than_the_limit_is_refused_before_tokenising() {
        let limits = Limits { prompts: 3, ..Limits::default() };
        let body = serde_json::json!({"prompt": [[1], [2], [3], [4]], "max_tokens": 1, "echo": true, "logprobs": 20}).to_string();
        let error = CompletionRequest::parse(body.as_bytes(), &served(), &limits).unwrap_err();
        assert_eq!((error.status, error.param.as_deref()), (413, Some("prompt")));
        assert!(error.message.contains("at most 3 (--max-prompts)"), "{}", error.message);
    }

    #[test]
    fn top_logprobs_serialise_as_an_object_in_order() {
        let top = TopLogprobs(vec![("b".into(), -0.5), ("a".into(), -1.0)]);
        assert_eq!(serde_json::to_string(&top).unwrap(), r#"{"b":-0.5,"a":-1.0}"#);
    }

    #[test]
    fn characters_split_across_tokens_count_once() {
        let text = "é!".as_bytes();
        assert_eq!(char_starts(&text[..1]) + char_starts(&text[1..]), 2);
    }
}
