//! Byte flips in a valid file's header, truncations and random bytes never
//! panic; truncations are refused exactly when they cut tensor data.

mod common;

use common::Gguf;
use mcscore_gguf::parse;
use proptest::prelude::*;

/// Every lookup a caller might make, on whatever header passed.
fn read_everything(bytes: &[u8]) {
    if let Ok(header) = parse(bytes) {
        for key in Gguf::valid().kvs.iter().map(|(k, _)| String::from_utf8_lossy(k).into_owned()) {
            let _ = header.get(&key);
            let _ = header.get_str(&key);
            let _ = header.get_u64(&key);
        }
        let _ = format!("{header:?}");
        if let Err(fault) = mcscore_gguf::check_model(&header) {
            assert!(fault.offset() <= bytes.len() as u64);
            let _ = fault.to_string();
        }
    } else if let Err(fault) = parse(bytes) {
        let _ = fault.to_string();
        let _ = fault.offset();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn header_flips_never_panic(flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let built = Gguf::valid().build();
        let header_len = built.at("header_end") as usize;
        let mut bytes = built.bytes.clone();
        for (at, value) in flips {
            bytes[at.index(header_len)] = value;
        }
        read_everything(&bytes);
    }

    #[test]
    fn truncations_are_refused_iff_they_cut_tensor_data(len in 0usize..2000) {
        let built = Gguf::valid().build();
        let len = len.min(built.bytes.len());
        let result = parse(&built.bytes[..len]);
        prop_assert_eq!(result.is_ok(), len as u64 >= built.at("t3.data_end"));
    }

    #[test]
    fn flipped_and_truncated_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let built = Gguf::valid().build();
        let header_len = built.at("header_end") as usize;
        let mut bytes = built.bytes.clone();
        for (at, value) in flips {
            bytes[at.index(header_len)] = value;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        read_everything(&bytes);
    }

    #[test]
    fn random_bytes_after_the_magic_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut bytes = b"GGUF\x03\0\0\0".to_vec();
        bytes.extend(tail);
        read_everything(&bytes);
    }
}
