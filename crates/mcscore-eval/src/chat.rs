//! Scoring inside a chat template: each task's question (scaffold and any
//! shots included) is the user's turn, the template's generation prompt
//! opens the assistant's, and each option is the start of the answer; only
//! the option's tokens are scored, as without a template.
//!
//! Jinja templates (the GGUF's own, or a file) are rendered by minijinja set
//! up as Hugging Face's `apply_chat_template` sets up Python's jinja2
//! (`trim_blocks`, `lstrip_blocks`, loop controls, `raise_exception`, Python's
//! string methods); llama.cpp's built-in names by `llama_chat_apply_template`.
//! The traps that cost published evaluations points are guarded, and each
//! guard is recorded in the log's header ([`ChatHeader`]): exactly one BOS,
//! thinking turned off where the template knows `enable_thinking`, no
//! end-of-turn before the option, and the option right after the generation
//! prompt (no `" "` delimiter inside the assistant's turn).

use std::path::{Path, PathBuf};

use mcscore_engine::{builtin_templates, Engine, EngineError, PreparedTask, MAX_TEXT_BYTES};
use mcscore_format::{sha256_hex, Task};
pub use mcscore_log::ChatHeader;
use serde::Serialize;

use crate::ChatError;
use crate::EvalError;

/// Which chat template a run scores inside (`--chat-template`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TemplateChoice {
    /// No template: `question + " " + option`, as llama-perplexity scores.
    #[default]
    None,
    /// The GGUF's own `tokenizer.chat_template`.
    Auto,
    /// One of llama.cpp's built-in templates ([`builtin_templates`]).
    Named(String),
    /// A Jinja template file.
    File(PathBuf),
}

impl TemplateChoice {
    /// `none`, `auto`, a built-in name, or else a file's path (a file named
    /// like a built-in template is reached as `./NAME`).
    pub fn parse(value: &str) -> Result<TemplateChoice, String> {
        match value {
            "none" => return Ok(TemplateChoice::None),
            "auto" => return Ok(TemplateChoice::Auto),
            "" => return Err("an empty value; give none, auto, a built-in name or a file".into()),
            _ => {}
        }
        let names = builtin_templates();
        if names.iter().any(|n| n == value) {
            return Ok(TemplateChoice::Named(value.to_owned()));
        }
        let path = Path::new(value);
        if path.is_file() {
            return Ok(TemplateChoice::File(path.to_owned()));
        }
        Err(format!(
            "{value:?} is neither a file nor one of llama.cpp's built-in templates ({}); none and auto are the other values",
            names.join(", ")
        ))
    }

    /// The template as a header records it (`auto`, a name or a path); `None` for no template.
    pub fn name(&self) -> Option<String> {
        match self {
            TemplateChoice::None => None,
            TemplateChoice::Auto => Some("auto".into()),
            TemplateChoice::Named(name) => Some(name.clone()),
            TemplateChoice::File(path) => Some(path.display().to_string()),
        }
    }
}

/// How a run uses a chat template: [`ChatSpec::default`] uses none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatSpec {
    /// Which template the prompts are rendered inside (`--chat-template`).
    pub template: TemplateChoice,
    /// A system turn before the question (`--system`).
    pub system: Option<String>,
    /// Score a k-shot file as turns: each of its first `shots` solved examples
    /// a user/assistant pair, then the question (`--shots-as-turns`; the
    /// count is the file's manifest record). Without it the examples stay in
    /// the user's turn.
    pub shots: Option<usize>,
}

impl ChatSpec {
    /// A spec that scores inside `template`, with no system turn and the shots left in the question.
    pub fn new(template: TemplateChoice) -> ChatSpec {
        ChatSpec { template, system: None, shots: None }
    }

    /// Whether the run scores without a template (a job refuses `system` or `shots` set then).
    pub fn is_none(&self) -> bool {
        self.template == TemplateChoice::None
    }
}

/// The largest template read (a GGUF's or a file's): real ones are a few KiB.
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;
/// minijinja's instruction budget for one prompt: a real template renders a
/// prompt in a few thousand; a loop that would run for hours stops here.
const RENDER_FUEL: u64 = 2_000_000;

/// What renders a template.
pub(crate) const JINJA_RENDERER: &str = "minijinja 2 (Hugging Face's jinja2 settings, Python string methods)";
/// What renders a llama.cpp built-in template.
pub(crate) const BUILTIN_RENDERER: &str = "llama.cpp llama_chat_apply_template";

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Message<'a> {
    pub(crate) role: &'static str,
    pub(crate) content: &'a str,
}

enum Renderer {
    Jinja(Jinja),
    Builtin(String),
}

/// Bytes a template's rendering of one prompt may hold at once: the prompt
/// (at most [`MAX_TEXT_BYTES`]), the conversation it was given and what it
/// builds on the way, a small multiple of the prompt's cap.
pub(crate) const RENDER_MEMORY: usize = 16 * MAX_TEXT_BYTES;

/// A Jinja template rendered on a thread of its own, whose allocations are
/// bounded by [`RENDER_MEMORY`] (see [`mcscore_engine::budget`]).
struct Jinja {
    jobs: std::sync::mpsc::Sender<Job>,
    answers: std::sync::Mutex<std::sync::mpsc::Receiver<Result<String, Refusal>>>,
    overrun: mcscore_engine::budget::Overrun,
}

/// Why a template did not render: the line it failed on, where known, and what.
type Refusal = (Option<usize>, String);

/// One prompt to render: the variables Hugging Face's apply_chat_template passes.
struct Job {
    messages: Vec<(&'static str, String)>,
    add_generation_prompt: bool,
    thinking: bool,
}

impl Jinja {
    /// Compiles `text` on the bounded thread (minijinja folds constant
    /// expressions as it compiles: `'ab' * 50000000` is built then) and keeps
    /// the thread for the renderings.
    fn start(text: String, bos_token: String, eos_token: String) -> Result<Jinja, Refusal> {
        let (jobs, inbox) = std::sync::mpsc::channel::<Job>();
        let (outbox, answers) = std::sync::mpsc::channel();
        let overrun = mcscore_engine::budget::Overrun::new();
        let watched = overrun.clone();
        std::thread::Builder::new()
            .name("chat-template".into())
            .spawn(move || {
                let compiled = mcscore_engine::budget::bounded(RENDER_MEMORY, &watched, || environment(text));
                let env = match compiled {
                    Ok(env) => {
                        let _ = outbox.send(Ok(String::new()));
                        env
                    }
                    Err(error) => {
                        let _ = outbox.send(Err(describe(&error)));
                        return;
                    }
                };
                for job in inbox {
                    let answer =
                        mcscore_engine::budget::bounded(RENDER_MEMORY, &watched, || render_jinja(&env, &job, &bos_token, &eos_token));
                    if outbox.send(answer).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| (None, format!("starting its rendering thread: {e}")))?;
        let jinja = Jinja { jobs, answers: std::sync::Mutex::new(answers), overrun };
        jinja.answer().map(|_| jinja)
    }

    /// The rendered prompt, or why not (the template's error, or its memory).
    fn render(&self, job: Job) -> Result<String, Refusal> {
        if self.overrun.raised() {
            return Err(over());
        }
        self.jobs.send(job).map_err(|_| ended())?;
        self.answer()
    }

    /// The rendering thread's next answer, or why none comes.
    fn answer(&self) -> Result<String, Refusal> {
        use std::sync::mpsc::RecvTimeoutError;
        let answers = self.answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            match answers.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(answer) => return answer,
                Err(RecvTimeoutError::Timeout) if self.overrun.raised() => return Err(over()),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(ended()),
            }
        }
    }
}

/// What a template that passed [`RENDER_MEMORY`] is told.
fn over() -> Refusal {
    let message = format!(
        "compiling it or rendering one prompt took more than {} MiB of memory, {} times the largest prompt; it is refused",
        RENDER_MEMORY >> 20,
        RENDER_MEMORY / MAX_TEXT_BYTES
    );
    (None, message)
}

fn ended() -> Refusal {
    (None, "its rendering thread has ended".to_owned())
}

/// An output that refuses to grow past [`MAX_TEXT_BYTES`]: a prompt is refused
/// as it passes the cap, not once the template has written all of it.
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_TEXT_BYTES {
            return Err(std::io::Error::other(format!("a prompt of more than {MAX_TEXT_BYTES} bytes (4 MiB)")));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a minijinja error says, with the line it names.
fn describe(error: &minijinja::Error) -> Refusal {
    let detail = match error.detail() {
        Some(detail) => format!("{}: {detail}", error.kind()),
        None => error.kind().to_string(),
    };
    // A write refused by Capped: its message is the whole story.
    let cause = std::error::Error::source(error).map(ToString::to_string);
    let text = match (error.kind(), cause) {
        (minijinja::ErrorKind::WriteFailure, Some(cause)) => cause,
        _ => detail,
    };
    (error.line(), text)
}

/// Renders `job` in `env`'s template, on the bounded thread.
fn render_jinja(env: &minijinja::Environment<'static>, job: &Job, bos_token: &str, eos_token: &str) -> Result<String, Refusal> {
    let messages: Vec<Message<'_>> = job.messages.iter().map(|(role, content)| Message { role, content }).collect();
    let template = env.get_template(TEMPLATE_NAME).map_err(|e| describe(&e))?;
    let context = minijinja::context! {
        messages => messages,
        add_generation_prompt => job.add_generation_prompt,
        bos_token => bos_token,
        eos_token => eos_token,
        tools => (),
        documents => (),
        enable_thinking => job.thinking,
    };
    let mut out = Capped(Vec::new());
    template.render_captured_to(context, &mut out).map_err(|e| describe(&e))?;
    String::from_utf8(out.0).map_err(|e| (None, format!("it wrote text that is not UTF-8: {e}")))
}

/// A template resolved against a model, ready to render.
pub(crate) struct Template {
    pub(crate) label: String,
    origin: &'static str,
    pub(crate) sha256: String,
    renderer: Renderer,
}

impl Template {
    /// The template `choice` names for `engine`'s model; `None` for [`TemplateChoice::None`].
    pub(crate) fn resolve(choice: &TemplateChoice, engine: &Engine) -> Result<Option<Template>, EvalError> {
        // Empty where the model has none, as transformers passes them.
        let (bos, eos) = engine.special_texts();
        let (bos_token, eos_token) = (bos.unwrap_or_default(), eos.unwrap_or_default());
        let jinja = |label: String, origin: &'static str, text: String| -> Result<Template, EvalError> {
            if text.len() as u64 > MAX_TEMPLATE_BYTES {
                return Err(EvalError::Chat(ChatError::Template {
                    template: label,
                    line: None,
                    message: format!("{} bytes; at most {MAX_TEMPLATE_BYTES} (1 MiB)", text.len()),
                }));
            }
            let sha256 = sha256_hex(text.as_bytes());
            let jinja = Jinja::start(text, bos_token.clone(), eos_token.clone())
                .map_err(|(line, message)| EvalError::Chat(ChatError::Template { template: label.clone(), line, message }))?;
            Ok(Template { sha256, renderer: Renderer::Jinja(jinja), label, origin })
        };
        Ok(Some(match choice {
            TemplateChoice::None => return Ok(None),
            TemplateChoice::Auto => {
                let text = engine
                    .chat_template()
                    .map_err(EvalError::engine(engine.path()))?
                    .ok_or_else(|| EvalError::Chat(ChatError::NoChatTemplate { model: engine.path().to_owned() }))?;
                jinja(format!("{} (its tokenizer.chat_template)", engine.path().display()), "gguf", text)?
            }
            TemplateChoice::File(path) => {
                let size = std::fs::metadata(path).map_err(EvalError::io(path))?.len();
                if size > MAX_TEMPLATE_BYTES {
                    let message = format!("{size} bytes; at most {MAX_TEMPLATE_BYTES} (1 MiB)");
                    return Err(EvalError::Chat(ChatError::Template { template: path.display().to_string(), line: None, message }));
                }
                let bytes = mcscore_format::read_input(path)?;
                let text = String::from_utf8(bytes).map_err(|e| {
                    EvalError::Chat(ChatError::Template {
                        template: path.display().to_string(),
                        line: None,
                        message: format!("not UTF-8: {e}"),
                    })
                })?;
                jinja(path.display().to_string(), "file", text)?
            }
            TemplateChoice::Named(name) => Template {
                label: format!("{name} (llama.cpp's built-in)"),
                origin: "builtin",
                sha256: sha256_hex(name.as_bytes()),
                renderer: Renderer::Builtin(name.clone()),
            },
        }))
    }

    /// Renders a conversation, opening the assistant's turn with
    /// `add_generation_prompt`, thinking on or off where the template knows
    /// `enable_thinking`.
    pub(crate) fn render(
        &self,
        engine: &Engine,
        messages: &[Message<'_>],
        add_generation_prompt: bool,
        thinking: bool,
    ) -> Result<String, EvalError> {
        match &self.renderer {
            Renderer::Jinja(jinja) => {
                let messages = messages.iter().map(|m| (m.role, m.content.to_owned())).collect();
                jinja
                    .render(Job { messages, add_generation_prompt, thinking })
                    .map_err(|(line, message)| EvalError::Chat(ChatError::Template { template: self.label.clone(), line, message }))
            }
            Renderer::Builtin(name) => {
                let messages: Vec<(&str, &str)> = messages.iter().map(|m| (m.role, m.content)).collect();
                engine.apply_builtin_template(name, &messages, add_generation_prompt).map_err(|e| EvalError::Chat(ChatError::Builtin(e)))
            }
        }
    }
}

const TEMPLATE_NAME: &str = "chat_template";

/// A Jinja environment as transformers' `_compile_jinja_template` makes one.
fn environment(text: String) -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.set_fuel(Some(RENDER_FUEL));
    env.add_function("raise_exception", |message: String| -> Result<String, minijinja::Error> {
        Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("the template raised: {message}")))
    });
    env.add_template_owned(TEMPLATE_NAME, text)?;
    Ok(env)
}

/// Splits a k-shot question into its `shots` solved examples, each a
/// (question, answer) pair, and the question asked: an example is its
/// question up to and including `Answer:`, then the answer up to the blank
/// line that ends it (how `build --shots` writes them). `None` where the
/// question does not hold exactly that many: what is left must hold one
/// `Answer:`, at its end.
pub(crate) fn split_shots(question: &str, shots: usize) -> Option<(Vec<(&str, &str)>, &str)> {
    const CUE: &str = "Answer:";
    let mut rest = question;
    // Not with_capacity(shots): the count comes from a flag or a manifest.
    let mut examples = Vec::new();
    for _ in 0..shots {
        let cue = rest.find(CUE)? + CUE.len();
        let (asked, after) = rest.split_at(cue);
        let end = after.find("\n\n")?;
        let answer = after[..end].strip_prefix(' ').unwrap_or(&after[..end]);
        if answer.is_empty() {
            return None;
        }
        examples.push((asked, answer));
        rest = &after[end + 2..];
    }
    // One cue left, the question's own: fewer shots than the file holds are refused.
    (rest.trim_end().ends_with(CUE) && rest.matches(CUE).count() == 1).then_some((examples, rest))
}

/// The solved examples per question that the nearest manifest found for
/// `task_file` (whose sha256 is `file_sha256`), or the bundled one, records;
/// `None` where none records any.
pub fn found_shots(task_file: &Path, file_sha256: &str) -> Option<usize> {
    crate::groups::found_entries(task_file, file_sha256, &mut |_, _| {}).into_iter().find_map(|(_, e)| e.shots).map(|s| s.k)
}

/// Every task's prompt rendered inside the template, up to where its option
/// starts, with the header that records how (its BOS filled in by the
/// engine's tokenisation).
struct Rendered {
    prompts: Vec<String>,
    header: ChatHeader,
}

/// Renders the prompt of each task (in run order) and checks the guards
/// that rendering alone can check: a generation prompt there, no
/// end-of-turn token before the option.
fn render_tasks(
    spec: &ChatSpec,
    template: &Template,
    engine: &Engine,
    file: &Path,
    tasks: &[(usize, Task<'_>)],
) -> Result<Rendered, EvalError> {
    let fail = |message: String| EvalError::Chat(ChatError::Template { template: template.label.clone(), line: None, message });
    if let Some(system) = &spec.system {
        if engine.has_special_text(system).map_err(EvalError::engine(file))? {
            return Err(fail("the system text holds the text of a special token, which the prompt would read as that token".into()));
        }
    }
    let prompts = tasks
        .iter()
        .map(|(index, task)| template.render(engine, &conversation(spec, file, *index, task.question)?, true, false))
        .collect::<Result<Vec<String>, EvalError>>()?;
    // A template that drops the question (one that writes only the
    // generation prompt) would have every option scored without it.
    for ((index, task), prompt) in tasks.iter().zip(&prompts) {
        let turns = conversation(spec, file, *index, task.question)?;
        let asked = turns.last().map_or("", |m| m.content.trim());
        if !asked.is_empty() && !prompt.contains(asked) {
            return Err(fail(format!(
                "task {index}: its prompt does not hold the task's question, so every option would be scored without it: the template drops or rewrites the user's turn"
            )));
        }
    }
    let (first_index, first) = tasks.first().map(|(i, t)| (*i, t.question)).unwrap_or((0, ""));
    let first_task_prompt = prompts.first().cloned().unwrap_or_default();
    let turns = conversation(spec, file, first_index, first)?;
    let without = template.render(engine, &turns, false, false)?;
    let generation_prompt = match first_task_prompt.strip_prefix(without.as_str()) {
        // The usual case: the generation prompt is appended to the conversation.
        Some(added) if !added.is_empty() => added.to_owned(),
        // Otherwise what follows the question (Llama 2's and Mistral's [/INST]
        // opens the assistant's turn whatever add_generation_prompt says).
        _ => {
            let asked = turns.last().map_or("", |m| m.content.trim());
            first_task_prompt
                .rfind(asked)
                .filter(|_| !asked.is_empty())
                .map_or_else(String::new, |at| first_task_prompt[at + asked.len()..].to_owned())
        }
    };
    if generation_prompt.is_empty() {
        return Err(fail("it emits no generation prompt: nothing follows the question, so the assistant's turn is never opened".into()));
    }
    if let Some(&last) = engine.tokenize(&first_task_prompt).map_err(EvalError::engine(file))?.last() {
        if engine.is_end_of_generation(last) {
            let text = String::from_utf8_lossy(&engine.piece(last)).into_owned();
            return Err(fail(format!("the prompt ends with the end-of-turn token {text:?}: the option would follow a closed turn")));
        }
    }
    if let Some(open) = generation_prompt.rfind("<think>").filter(|&at| !generation_prompt[at..].contains("</think>")) {
        return Err(fail(format!(
            "its generation prompt {:?} opens a think block at byte {open} and leaves it open: the option would be scored as the start of a chain of thought",
            generation_prompt
        )));
    }
    // Every prompt must open the assistant's turn the same way: a template
    // that renders by content could drop it for some task.
    if let Some(((index, _), _)) = tasks.iter().zip(&prompts).find(|(_, p)| !p.ends_with(&generation_prompt)) {
        return Err(fail(format!(
            "task {index}: its prompt does not end with the generation prompt {generation_prompt:?} the first task's does"
        )));
    }
    // Thinking is off where turning it on renders something else.
    let thinking = template.render(engine, &turns, true, true)? != first_task_prompt;
    let header = ChatHeader {
        template: spec.template.name().unwrap_or_else(|| "none".into()),
        origin: template.origin.to_owned(),
        sha256: template.sha256.clone(),
        renderer: match template.renderer {
            Renderer::Jinja(_) => JINJA_RENDERER.to_owned(),
            Renderer::Builtin(_) => BUILTIN_RENDERER.to_owned(),
        },
        system: spec.system.clone(),
        shots_as_turns: spec.shots,
        bos: String::new(),
        thinking: if thinking { "disabled" } else { "not in template" }.to_owned(),
        generation_prompt,
        delimiter: String::new(),
        first_task_prompt,
    };
    Ok(Rendered { prompts, header })
}

/// Tasks tokenised as `question + " " + option` without a template, or
/// behind their prompts rendered in `template`, with the header that
/// records how; the engine's refusals go through `describe`. With a fixed
/// context of `limit` tokens, a task that cannot fit it is refused by its
/// bytes before it is tokenised.
pub(crate) fn prepare(
    engine: &Engine,
    spec: &ChatSpec,
    template: Option<&Template>,
    file: &Path,
    tasks: &[(usize, Task<'_>)],
    limit: Option<usize>,
    describe: impl Fn(EngineError) -> EvalError,
) -> Result<(Vec<PreparedTask>, Option<ChatHeader>), EvalError> {
    let longest = |task: &Task<'_>| task.options().iter().map(|o| o.len()).max().unwrap_or(0);
    let Some(template) = template else {
        if let Some(limit) = limit {
            let texts = tasks.iter().map(|(i, t)| (*i, t.question.len() + 1 + longest(t)));
            engine.refuse_by_bytes(texts, limit).map_err(&describe)?;
        }
        return Ok((engine.prepare(tasks).map_err(describe)?, None));
    };
    let rendered = render_tasks(spec, template, engine, file, tasks)?;
    if let Some(limit) = limit {
        let texts = tasks.iter().zip(&rendered.prompts).map(|((i, t), prompt)| (*i, prompt.len() + longest(t)));
        engine.refuse_by_bytes(texts, limit).map_err(&describe)?;
    }
    let (prepared, bos) = engine.prepare_chat(tasks, &rendered.prompts).map_err(describe)?;
    Ok((prepared, Some(ChatHeader { bos: bos.as_str().to_owned(), ..rendered.header })))
}

/// A task's turns: the system's, each solved example's (with `spec.shots`), the question's.
fn conversation<'a>(spec: &'a ChatSpec, file: &Path, index: usize, question: &'a str) -> Result<Vec<Message<'a>>, EvalError> {
    let mut messages = Vec::new();
    if let Some(system) = &spec.system {
        messages.push(Message { role: "system", content: system });
    }
    let asked = match spec.shots {
        Some(shots) => {
            let (examples, asked) = split_shots(question, shots)
                .ok_or_else(|| EvalError::Chat(ChatError::ShotsNotSplit { path: file.to_owned(), task: index, shots }))?;
            for (user, assistant) in examples {
                messages.push(Message { role: "user", content: user });
                messages.push(Message { role: "assistant", content: assistant });
            }
            asked
        }
        None => question,
    };
    messages.push(Message { role: "user", content: asked });
    Ok(messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shots_split_into_examples_and_the_question() {
        let question = "The following are questions about maths.\n\nQuestion: 1+1?\nA. 2\nB. 3\nAnswer: A\n\nQuestion: 2+2?\nA. 3\nB. 4\nAnswer: B\n\nQuestion: 3+3?\nA. 6\nB. 5\nAnswer:";
        let (examples, asked) = split_shots(question, 2).unwrap();
        assert_eq!(
            examples,
            [
                ("The following are questions about maths.\n\nQuestion: 1+1?\nA. 2\nB. 3\nAnswer:", "A"),
                ("Question: 2+2?\nA. 3\nB. 4\nAnswer:", "B")
            ]
        );
        assert_eq!(asked, "Question: 3+3?\nA. 6\nB. 5\nAnswer:");
        assert!(split_shots(question, 3).is_none(), "only two examples");
        assert!(split_shots(question, usize::MAX).is_none());
        assert!(split_shots("Question: x\nAnswer: A\n\nno cue at the end", 1).is_none());
        assert_eq!(split_shots("Question: x Answer:", 0), Some((vec![], "Question: x Answer:")));
    }

    #[test]
    fn choices_parse() {
        assert_eq!(TemplateChoice::parse("none"), Ok(TemplateChoice::None));
        assert_eq!(TemplateChoice::parse("auto"), Ok(TemplateChoice::Auto));
        assert_eq!(TemplateChoice::parse("gemma"), Ok(TemplateChoice::Named("gemma".into())));
        let err = TemplateChoice::parse("no-such-template").unwrap_err();
        assert!(err.contains("chatml") && err.contains("llama3"), "{err}");
        assert!(TemplateChoice::parse("").is_err());
    }

    fn render_alone(text: &str) -> Result<String, Refusal> {
        let jinja = Jinja::start(text.to_owned(), String::new(), String::new())?;
        jinja.render(Job { messages: vec![("user", "What is 2 + 2?".into())], add_generation_prompt: true, thinking: false })
    }

    /// This process's peak resident memory (Linux's VmHWM), in bytes.
    fn peak_resident() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    #[test]
    fn no_template_takes_more_than_its_memory_bound() {
        assert!(mcscore_engine::budget::installed(), "the unit tests run with BoundedAlloc");
        // Each doubles a string forty times (a terabyte), by a different route.
        let growers = [
            "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
            "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
            "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s | replace('a', 'aa') | replace('b', 'bb') %}{% endfor %}{{ ns.s | length }}",
            "{% set ns = namespace(l=['ab']) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | join('') | length }}",
            // One step: minijinja allows a repeated string of up to 100 MB.
            "{{ ('ab' * 50000000) | length }}",
        ];
        for text in growers {
            let (line, message) = render_alone(text).unwrap_err();
            assert_eq!(line, None, "{text}");
            assert!(message.contains(&format!("more than {} MiB", RENDER_MEMORY >> 20)), "{text}: {message}");
            // The stopped threads hold at most their bound each.
            assert!(peak_resident() < 1 << 30, "{text}: peak {} MiB", peak_resident() >> 20);
        }
    }

    #[test]
    fn a_prompt_is_refused_as_it_passes_the_cap() {
        let (_, message) = render_alone("{% for i in range(5) %}{{ 'a' * 1000000 }}{% endfor %}").unwrap_err();
        assert_eq!(message, format!("a prompt of more than {MAX_TEXT_BYTES} bytes (4 MiB)"));
        assert_eq!(render_alone("{{ 'a' * 1000000 }}").unwrap().len(), 1_000_000);
        // A template's own error keeps its line.
        assert_eq!(render_alone("\n{{ raise_exception('no') }}").unwrap_err().0, Some(2));
    }

    #[test]
    fn jinja_renders_as_transformers_sets_jinja2_up() {
        let text =
            "{% for m in messages %}\n  {{ m.role }}: {{ m.content.strip() }}|\n{% endfor %}{% if add_generation_prompt %}>{% endif %}\n";
        let env = environment(text.to_owned()).unwrap();
        let out = env
            .get_template(TEMPLATE_NAME)
            .unwrap()
            .render(minijinja::context! { messages => [Message { role: "user", content: " hi " }], add_generation_prompt => true })
            .unwrap();
        // trim_blocks drops the newline after a block tag, lstrip_blocks the
        // indent before one, and the template's final newline goes (jinja2's
        // keep_trailing_newline=False).
        assert_eq!(out, "  user: hi|\n>");
        let err =
            environment("{{ raise_exception('no system') }}".into()).unwrap().get_template(TEMPLATE_NAME).unwrap().render(()).unwrap_err();
        assert!(describe(&err).1.contains("no system"));
        assert_eq!(describe(&environment("line one\n{% if %}".into()).unwrap_err()).0, Some(2));
        // A compile error comes back from the rendering thread with its line.
        assert_eq!(render_alone("line one\n{% if %}").unwrap_err().0, Some(2));
    }
}
