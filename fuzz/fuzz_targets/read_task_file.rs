//! Feeds arbitrary bytes to the strict validator and the lenient reader. Any
//! panic is a bug; so is a file that validates but does not re-encode to the
//! same bytes, or one the lenient reader accepts with fewer tasks than it has.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcscore_format::{read_lenient, validate, Task};

fuzz_target!(|bytes: &[u8]| {
    let faults = validate(bytes);
    let lenient = read_lenient(bytes, std::path::Path::new("fuzz.bin"));
    if faults.is_empty() {
        let tasks = lenient.expect("a strictly valid file must read leniently");
        let mut encoded = (tasks.len() as u32).to_le_bytes().to_vec();
        let mut at = 4 + 4 * tasks.len() as u32;
        for task in &tasks {
            encoded.extend_from_slice(&at.to_le_bytes());
            at += task.encoded_len() as u32;
        }
        for task in &tasks {
            task.encode(&mut encoded);
        }
        assert_eq!(encoded, bytes, "valid file does not re-encode identically");
        assert!(tasks.iter().all(|t: &Task<'_>| t.gold().is_some()));
    }
});
