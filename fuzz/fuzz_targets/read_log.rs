//! Feeds arbitrary bytes to the sample-log reader that `report`, `merge`,
//! `compare` and `--resume` trust. Any panic is a bug; so is a log that
//! reads but whose lines do not hold together, or whose completeness check
//! or accuracies fail on what was read.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    let Ok(contents) = mcscore_log::parse(bytes, path) else { return };
    for record in &contents.records {
        mcscore_log::check_record(&contents.header, record).expect("a line that was read passes the checks it was read with");
    }
    let _ = contents.require_complete(path);
    for &norm in mcscore_log::normalisations(&contents.records) {
        let accuracy = mcscore_log::accuracy(&contents.records, norm);
        assert!(accuracy.successes <= accuracy.n);
    }
});
