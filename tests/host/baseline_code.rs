//! The baselines' loops call the nop target directly (`call rel32`), as the
//! kernel runner's C loop does, not through the GOT and a register: a
//! baseline people subtract must cost what upstream's costs.

use object::{Object, ObjectSection, ObjectSymbol};

/// The direct calls (`e8 rel32`) to `target` in the bytes of every function
/// whose name contains all of `name_parts`.
fn direct_calls(binary: &[u8], name_parts: &[&str], target: &str) -> (usize, usize) {
    let file = object::File::parse(binary).unwrap();
    let target_addr = file
        .symbols()
        .find(|s| s.name() == Ok(target))
        .unwrap_or_else(|| panic!("{target} is not in the symbol table"))
        .address();
    let text = file.section_by_name(".text").unwrap();
    let data = text.data().unwrap();
    let (mut functions, mut calls) = (0, 0);
    for sym in file.symbols() {
        let name = sym.name().unwrap_or("");
        if !name_parts.iter().all(|p| name.contains(p)) || sym.size() == 0 {
            continue;
        }
        functions += 1;
        let start = (sym.address() - text.address()) as usize;
        let body = &data[start..start + sym.size() as usize];
        for (i, window) in body.windows(5).enumerate() {
            let rel = i32::from_le_bytes([window[1], window[2], window[3], window[4]]);
            let next = sym.address() + i as u64 + 5;
            if window[0] == 0xe8 && next.wrapping_add_signed(i64::from(rel)) == target_addr {
                calls += 1;
            }
        }
    }
    (functions, calls)
}

#[test]
fn the_usermode_loops_call_the_target_directly() {
    let binary = std::fs::read(crate::common::bench_bin()).unwrap();
    // trig-usermode-count and trig-usermode-nocount: Counted's producer.
    let (functions, calls) = direct_calls(
        &binary,
        &["Counted", "Workload", "produce"],
        "bench_target_nop",
    );
    assert!(functions >= 1, "no Counted::produce in the binary");
    assert!(
        calls >= 2,
        "{calls} direct calls of bench_target_nop in Counted::produce"
    );
}
