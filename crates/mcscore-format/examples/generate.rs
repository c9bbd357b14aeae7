//! Writes a large valid task file for benchmarks:
//! `cargo run --release -p mcscore-format --example generate -- OUT.bin TASKS`.
//! Tasks are letter-mode MMLU-shaped prompts of about 500 bytes.

use mcscore_format::{Task, TaskWriter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(out), Some(n)) = (args.next(), args.next()) else {
        return Err("usage: generate OUT.bin TASKS".into());
    };
    let n: usize = n.parse()?;
    let mut writer = TaskWriter::create(&out, n)?;
    let filler = "The quick brown fox jumps over the lazy dog while the committee deliberates. ";
    for i in 0..n {
        let question = format!(
            "Question: Task {i}: {}{}\nA. option one for {i}\nB. option two\nC. option three\nD. option four\nAnswer:",
            filler.repeat(5),
            "é".repeat(i % 7)
        );
        writer.write(&Task::new(&question, vec!["A", "B", "C", "D"], i % 4))?;
    }
    writer.finish()?;
    Ok(())
}
