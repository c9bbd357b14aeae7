//! Feeds arbitrary bytes to the GGUF checker. Any panic is a bug; so is a
//! header that passes with numbers gguf.cpp could not have produced, or a
//! lookup that panics on it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    match mcscore_gguf::parse(bytes) {
        Ok(header) => {
            assert!(matches!(header.version(), 2 | 3));
            assert!(header.alignment().is_power_of_two());
            assert!(header.data_offset() <= bytes.len() as u64);
            if header.tensor_count() > 0 {
                assert_eq!(header.data_offset() % u64::from(header.alignment()), 0);
            } else {
                assert_eq!(header.data_size(), 0);
            }
            assert_eq!(header.data_size() % u64::from(header.alignment()), 0);
            for key in ["general.alignment", "general.architecture", "general.name", "test.u8", "tokenizer.ggml.tokens", "a"] {
                let _ = header.get(key);
                let _ = header.get_str(key);
                let _ = header.get_u64(key);
            }
            if let Some(alignment) = header.get_u64("general.alignment") {
                assert_eq!(alignment, u64::from(header.alignment()));
            }
            if let Err(fault) = mcscore_gguf::check_model(&header) {
                assert!(fault.offset() <= bytes.len() as u64);
                let _ = fault.to_string();
            }
        }
        Err(fault) => {
            assert!(fault.offset() <= bytes.len() as u64);
            let _ = fault.to_string();
        }
    }
});
