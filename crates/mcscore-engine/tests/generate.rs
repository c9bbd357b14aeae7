//! Greedy generation with the real model: a response does not depend on
//! what it was generated beside, each token is the likeliest one that whole-
//! prompt scoring finds for the text before it, and a grammar holds every
//! response to its language.

use std::ops::ControlFlow;

mod common;

use common::model;
use mcscore_engine::{
    Completion, ContextSize, Engine, Finish, FlashAttention, Generation, GenerationRequest, Mmap, PromptRequest, SessionLimits, Settings,
};

fn settings() -> Settings {
    Settings {
        context: ContextSize::Auto,
        parallel: None,
        n_batch: 2048,
        threads: 2,
        threads_batch: 2,
        n_gpu_layers: 0,
        flash_attention: FlashAttention::Auto,
        kv_cache: Default::default(),
        rope: Default::default(),
        gpu_split: Default::default(),
        mmap: Mmap::Auto,
    }
}

/// Some share a long start (their cells then too), one is another's start.
const PROMPTS: [&str; 10] = [
    "Answer the following multiple choice question. The entire content of your response should be 'ANSWER: $LETTER'.\n\nWhat is 2 + 2?\nA) 3\nB) 4",
    "Answer the following multiple choice question. The entire content of your response should be 'ANSWER: $LETTER'.\n\nWhat is 3 + 3?\nA) 6\nB) 7",
    "The capital of France",
    "The capital of France is",
    "Question: Which gas do plants take in from the air?\nA) oxygen\nB) carbon dioxide\nC) helium\nD) neon\nAnswer the question. ANSWER:",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "1, 2, 3, 4,",
    "def fibonacci(n):",
    "Water boils at a temperature of",
    "The three primary colours are",
];

const LETTER: &str = "root ::= \"ANSWER: \" [A-D]";

fn requests(engine: &Engine) -> Vec<GenerationRequest> {
    PROMPTS
        .iter()
        .enumerate()
        .map(|(i, prompt)| {
            let mut tokens = engine.tokenize(prompt).unwrap();
            if let Some(bos) = engine.bos() {
                tokens.insert(0, bos);
            }
            // Every other request under a grammar, so waves mix both; a
            // constrained response may take a token per character.
            let grammar = (i % 2 == 1).then(|| LETTER.to_owned());
            GenerationRequest { max_tokens: if grammar.is_some() { 16 } else { 3 + i % 4 }, tokens, grammar }
        })
        .collect()
}

fn generate(engine: &Engine, requests: &[GenerationRequest], parallel: usize) -> Vec<Generation> {
    let mut out: Vec<Option<Generation>> = vec![None; requests.len()];
    let completion = engine
        .generate(requests, &settings(), parallel, &|| false, |i, g| {
            out[i] = Some(g);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(completion, Completion::Finished);
    out.into_iter().map(Option::unwrap).collect()
}

#[test]
fn responses_do_not_move_with_what_they_are_generated_beside() {
    let engine = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let requests = requests(&engine);
    let alone = generate(&engine, &requests, 1);
    assert_eq!(generate(&engine, &requests, 3), alone, "three at once");
    // Reversed, so each request has other neighbours and another sequence id.
    let reversed: Vec<GenerationRequest> = requests.iter().rev().cloned().collect();
    let mut back = generate(&engine, &reversed, 7);
    back.reverse();
    assert_eq!(back, alone);

    for (request, response) in requests.iter().zip(&alone) {
        let text = String::from_utf8_lossy(&engine.detokenize(&response.tokens)).into_owned();
        if request.grammar.is_some() {
            assert_eq!(response.finish, Finish::EndOfGeneration, "{text:?}");
            assert!(text.len() == 9 && text.starts_with("ANSWER: ") && "ABCD".contains(&text[8..]), "{text:?}");
        } else {
            assert!(!response.tokens.is_empty());
            if response.finish == Finish::MaxTokens {
                assert_eq!(response.tokens.len(), request.max_tokens);
            }
        }
    }
}

#[test]
fn each_free_token_is_the_likeliest_whole_prompt_scoring_finds() {
    let engine = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let requests: Vec<GenerationRequest> = requests(&engine).into_iter().filter(|r| r.grammar.is_none()).collect();
    let responses = generate(&engine, &requests, 4);
    let mut session = engine.session(&settings(), SessionLimits { max_prompt: 256, branches: 8 }).unwrap();
    for (request, response) in requests.iter().zip(&responses) {
        // The prompt and each prefix of the response, scored as one prompt:
        // the row after each position predicts the next response token.
        let mut tokens = request.tokens.clone();
        tokens.extend(&response.tokens);
        let start = request.tokens.len() - 1;
        let prompt = PromptRequest { tokens: tokens.clone(), rows: start..tokens.len(), top: 1 };
        let rows = session.score(&[prompt], &|| false).unwrap().unwrap().remove(0);
        for (k, row) in rows.iter().enumerate() {
            let likeliest = row.top[0].0;
            match response.tokens.get(k) {
                Some(&token) => {
                    assert_eq!(token, likeliest, "token {k} of {:?}", String::from_utf8_lossy(&engine.detokenize(&response.tokens)))
                }
                // After the last token: the end of generation, unless the response was cut.
                None => assert!(response.finish == Finish::MaxTokens || engine.is_end_of_generation(likeliest)),
            }
        }
    }
}

#[test]
fn bad_requests_are_refused_before_any_decode() {
    let engine = Engine::load(&model(), &Settings::on_cpu()).unwrap();
    let good = requests(&engine).remove(0);
    let refuse = |request: GenerationRequest| {
        engine.generate(&[good.clone(), request], &settings(), 2, &|| false, |_, _| ControlFlow::Continue(())).unwrap_err().to_string()
    };
    assert_eq!(refuse(GenerationRequest { tokens: vec![], ..good.clone() }), "prompt 1: no tokens");
    assert_eq!(refuse(GenerationRequest { max_tokens: 0, ..good.clone() }), "prompt 1: a response of at most 0 tokens");
    let message = refuse(GenerationRequest { tokens: vec![u32::MAX], ..good.clone() });
    assert!(message.starts_with("prompt 1: token 0 is 4294967295, outside the vocabulary"), "{message}");
    let message = refuse(GenerationRequest { grammar: Some("root ::= [".into()), ..good.clone() });
    assert!(message.starts_with("prompt 1: its grammar does not parse"), "{message}");
}
