//! Images in tasks, through a vision projector, on a random LLaVA 1.5
//! (scripts/make-model --mmproj: a random Llama and a random CLIP projector
//! of llama.cpp's `mlp` kind; no vision-language model is reachable here, so
//! its scores mean nothing, but every step is llama.cpp's real one).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use mcscore_engine::{check_image, plan, ContextSize, Engine, EngineError, ImageFault, Settings, TaskScores, IMAGE_MARKER};
use mcscore_format::Task;

/// A random LLaVA 1.5 (model, projector) in `dir`.
fn random_vlm(dir: &Path) -> (PathBuf, PathBuf) {
    let (model, projector) = (dir.join("vlm.gguf"), dir.join("mmproj.gguf"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make-model");
    let shape = ["--dim", "128", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ff", "256", "--type", "q8_0"];
    let out = Command::new(script).args(shape).arg("-o").arg(&model).arg("--mmproj").arg(&projector).output().unwrap();
    assert!(out.status.success(), "make-model: {}", String::from_utf8_lossy(&out.stderr));
    (model, projector)
}

/// A PNG of `side` pixels square: a `colour` square on grey, at `offset`.
fn png(side: u32, colour: [u8; 3], offset: u32) -> Arc<[u8]> {
    let mut pixels = vec![128u8; (side * side * 3) as usize];
    for y in offset..(offset + side / 2).min(side) {
        for x in offset..(offset + side / 2).min(side) {
            let i = ((y * side + x) * 3) as usize;
            pixels[i..i + 3].copy_from_slice(&colour);
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Rgb);
    encoder.write_header().unwrap().write_image_data(&pixels).unwrap();
    out.into()
}

fn settings(n_batch: u32) -> Settings {
    Settings { context: ContextSize::Auto, n_batch, threads: 2, threads_batch: 2, ..Settings::on_cpu() }
}

/// Every task's option sums, in task order.
fn score(engine: &Engine, tasks: &[(usize, Task<'_>)], images: &[Vec<Arc<[u8]>>], settings: &Settings) -> Vec<Vec<f64>> {
    let prepared = engine.prepare_images(tasks, images).unwrap();
    let plan = plan(&prepared, settings).unwrap();
    let mut scores: Vec<TaskScores> = Vec::new();
    engine
        .score(&prepared, &plan, settings, &|| false, |s| {
            scores.push(s);
            ControlFlow::Continue(())
        })
        .unwrap();
    scores.sort_by_key(|s| s.task);
    scores.into_iter().map(|s| s.options.iter().map(|o| o.logprob_sum).collect()).collect()
}

const OPTIONS: [&str; 4] = ["red", "green", "blue", "yellow"];

fn question() -> String {
    format!("USER: {IMAGE_MARKER}\nWhat colour is the square?\nASSISTANT: The square is")
}

#[test]
fn an_image_changes_the_scores_and_they_do_not_move_with_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (model, projector) = random_vlm(dir.path());
    let mut engine = Engine::load(&model, &Settings::on_cpu()).unwrap();
    engine.attach_projector(&projector, 2).unwrap();
    assert_eq!(engine.projector(), Some(projector.as_path()));

    let with_image = question();
    let two_images = format!("{IMAGE_MARKER} and {IMAGE_MARKER}: which is red?\nAnswer:");
    let text = "What colour is the sky on a clear day? The sky is";
    let colours = [[255, 0, 0], [0, 200, 0], [0, 0, 255], [250, 220, 0]];
    // Image tasks between text tasks, one with two images; the same image
    // twice (tasks 0 and 4) and a 1 x 1 image.
    let mut tasks = Vec::new();
    let mut images = Vec::new();
    for (i, colour) in colours.iter().enumerate() {
        tasks.push((tasks.len(), Task::new(&with_image, OPTIONS.to_vec(), i)));
        images.push(vec![png(56, *colour, 4 * i as u32)]);
        tasks.push((tasks.len(), Task::new(text, OPTIONS.to_vec(), 2)));
        images.push(vec![]);
    }
    tasks.push((tasks.len(), Task::new(&with_image, OPTIONS.to_vec(), 0)));
    images.push(vec![png(56, colours[0], 0)]);
    tasks.push((tasks.len(), Task::new(&two_images, vec!["the first", "the second"], 0)));
    images.push(vec![png(56, colours[0], 0), png(300, colours[2], 40)]);
    tasks.push((tasks.len(), Task::new(&with_image, OPTIONS.to_vec(), 0)));
    images.push(vec![png(1, colours[1], 0)]);
    // Three questions on one image, in a row: they share one decode of it.
    let other_question = format!("USER: {IMAGE_MARKER}\nWhere is the square?\nASSISTANT: It is");
    let shared = png(56, colours[3], 10);
    for question in [&with_image, &other_question, &with_image] {
        tasks.push((tasks.len(), Task::new(question, OPTIONS.to_vec(), 3)));
        images.push(vec![shared.clone()]);
    }

    // Fills of every task alone and fills of many: the same bits.
    let packed = score(&engine, &tasks, &images, &settings(2048));
    let narrow = score(&engine, &tasks, &images, &settings(60));
    assert_eq!(packed, narrow);
    for (i, task) in tasks.iter().enumerate() {
        let alone = score(&engine, std::slice::from_ref(task), &images[i..=i], &settings(2048));
        assert_eq!(alone[0], packed[i], "task {i}");
    }
    // An image changes the scores; the same image gives the same ones.
    assert_ne!(packed[0], packed[2]);
    assert_eq!(packed[0], packed[8], "the same image and text, scored twice");
    assert_eq!(packed[11], packed[13], "the same image and text, in one fill");
    assert_ne!(packed[11], packed[12]);
    assert!(packed.iter().flatten().all(|v| v.is_finite() && *v < 0.0), "{packed:?}");

    // Text tasks score as without a projector.
    let plain = Engine::load(&model, &Settings::on_cpu()).unwrap();
    let text_tasks: Vec<(usize, Task<'_>)> = tasks.iter().filter(|(i, _)| images[*i].is_empty()).cloned().collect();
    let without = score(&plain, &text_tasks, &vec![vec![]; text_tasks.len()], &settings(2048));
    let with: Vec<Vec<f64>> = text_tasks.iter().map(|(i, _)| packed[*i].clone()).collect();
    assert_eq!(without, with);
}

#[test]
fn image_faults_are_named_by_task() {
    let dir = tempfile::tempdir().unwrap();
    let (model, projector) = random_vlm(dir.path());
    let mut engine = Engine::load(&model, &Settings::on_cpu()).unwrap();
    let with_image = question();
    fn task(q: &str) -> Vec<(usize, Task<'_>)> {
        vec![(7, Task::new(q, OPTIONS.to_vec(), 0))]
    }
    let red = png(56, [255, 0, 0], 0);

    // No projector: the task is named, and what to give.
    let error = engine.prepare_images(&task(&with_image), &[vec![red.clone()]]).unwrap_err();
    assert!(matches!(error, EngineError::NoProjector { task: 7 }), "{error}");
    assert!(error.to_string().contains("--mmproj"), "{error}");
    // A file that is no projector (the text model).
    let error = engine.attach_projector(&model, 2).unwrap_err();
    assert!(matches!(error, EngineError::ProjectorRefused { .. }), "{error}");
    engine.attach_projector(&projector, 2).unwrap();

    let error = engine.prepare_images(&task(&with_image), &[vec![]]).unwrap_err();
    assert!(matches!(error, EngineError::ImageCount { task: 7, markers: 1, images: 0 }), "{error}");
    // Not an image, and a PNG cut short.
    let error = engine.prepare_images(&task(&with_image), &[vec![Arc::from(&b"not an image"[..])]]).unwrap_err();
    assert!(matches!(error, EngineError::ImageUnreadable { task: 7, image: 0 }), "{error}");
    let cut: Arc<[u8]> = Arc::from(&red[..red.len() / 2]);
    let error = engine.prepare_images(&task(&with_image), &[vec![cut]]).unwrap_err();
    assert!(matches!(error, EngineError::ImageUnreadable { task: 7, image: 0 }), "{error}");
    // 60 megapixels (a PNG whose header says so): refused before any decode.
    let mut huge = red[..33].to_vec();
    huge[16..24].copy_from_slice(&[0, 0, 0x1f, 0x40, 0, 0, 0x1d, 0x4c]);
    let error = engine.prepare_images(&task(&with_image), &[vec![Arc::from(huge)]]).unwrap_err();
    assert!(matches!(error, EngineError::ImageTooLarge { task: 7, image: 0, width: 8000, height: 7500 }), "{error}");
    // An image last, with nothing every option shares after it.
    let error = engine.prepare_images(&task(&format!("Look: {IMAGE_MARKER}")), &[vec![red]]).unwrap_err();
    assert!(matches!(error, EngineError::NothingAfterImage { task: 7 }), "{error}");
}

#[test]
fn an_image_is_checked_as_llama_cpp_decodes_it_without_a_model() {
    let red = png(56, [255, 0, 0], 0);
    assert_eq!(check_image(&red), Ok((56, 56)));
    assert_eq!(check_image(&png(1, [0, 0, 0], 0)), Ok((1, 1)));
    assert_eq!(check_image(b"not an image"), Err(ImageFault::NotAnImage));
    // A PNG cut short: its header reads, its pixels do not.
    assert_eq!(check_image(&red[..red.len() / 2]), Err(ImageFault::Undecodable));
    let mut huge = red[..33].to_vec();
    huge[16..24].copy_from_slice(&[0, 0, 0x1f, 0x40, 0, 0, 0x1d, 0x4c]);
    assert_eq!(check_image(&huge), Err(ImageFault::TooLarge { width: 8000, height: 7500 }));
}
