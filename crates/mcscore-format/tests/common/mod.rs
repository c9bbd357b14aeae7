//! Builds task files byte by byte, so tests can break them in precise ways.

#![allow(dead_code)] // each test binary uses a different part

use mcscore_format::Task;

/// The encoding of `tasks` with a correct header and offset table.
pub fn file_bytes(tasks: &[Task<'_>]) -> Vec<u8> {
    let bodies: Vec<Vec<u8>> = tasks
        .iter()
        .map(|t| {
            let mut body = Vec::new();
            t.encode(&mut body);
            body
        })
        .collect();
    let mut offsets = Vec::new();
    let mut at = 4 + 4 * tasks.len() as u32;
    for body in &bodies {
        offsets.push(at);
        at += body.len() as u32;
    }
    assemble(&offsets, &bodies)
}

/// A header with the given offsets, then the bodies back to back.
pub fn assemble(offsets: &[u32], bodies: &[Vec<u8>]) -> Vec<u8> {
    let mut out = (offsets.len() as u32).to_le_bytes().to_vec();
    for o in offsets {
        out.extend_from_slice(&o.to_le_bytes());
    }
    for b in bodies {
        out.extend_from_slice(b);
    }
    out
}

pub fn sample(question: &'static str) -> Task<'static> {
    Task::new(question, vec!["A", "B", "C", "D"], 2)
}

/// Offset of task `i` as stored in `bytes`.
pub fn offset(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[4 + 4 * i..8 + 4 * i].try_into().unwrap())
}

pub fn set_offset(bytes: &mut [u8], i: usize, value: u32) {
    bytes[4 + 4 * i..8 + 4 * i].copy_from_slice(&value.to_le_bytes());
}
