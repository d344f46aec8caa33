//! Text transforms that specialise a WGSL kernel before it is compiled, where WGSL has no
//! attribute for it: loops unrolled (`// @unroll`), so that every index into a per-invocation
//! array is a constant and the array stays in registers; and a loop copied once per kind of
//! iteration (`// @levels`), so that each copy is one straight path for the driver's
//! compiler, as the CUDA kernel's template specialisations are.

/// How sweep_fused's z-loop is specialised ([`levels`]): `KNUDSEN_FUSED_LEVELS` = `four`
/// (the default: both flags constant), `full` or `first` (one of them), `one` (neither: the
/// loop as written, with run-time tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Levels {
    pub full: bool,
    pub first: bool,
    /// Every tile lies wholly inside the grid (the tile divides NX and NY): only the copies
    /// for whole tiles, without the run-time choice. Measured at 64^3 x 64^3
    /// (`docs/performance.md`, "The z-loop's copies for whole tiles only"): the same bits,
    /// half the binary, 136 registers instead of 139, 1.1% faster on an H100 (1.2% on an H200).
    pub whole: bool,
}

pub fn levels_from_env() -> Levels {
    match std::env::var("KNUDSEN_FUSED_LEVELS").as_deref() {
        Ok("one") => Levels { full: false, first: false, whole: false },
        Ok("full") => Levels { full: true, first: false, whole: false },
        Ok("first") => Levels { full: false, first: true, whole: false },
        Ok("four") | Err(_) => Levels { full: true, first: true, whole: false },
        Ok(other) => {
            log::warn!("KNUDSEN_FUSED_LEVELS={other}: expected four, full, first or one; using four");
            Levels { full: true, first: true, whole: false }
        }
    }
}

/// The index of the brace closing the block whose body starts at `from`.
fn closing_brace(src: &str, from: usize, head: &str) -> usize {
    let mut depth = 1;
    for (i, ch) in src[from..].char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return from + i;
        }
    }
    panic!("`{head}`: no matching brace")
}

/// Unroll every `for (var n = 0u; n < BOUND; n++) { body }` that follows a line
/// `// @unroll` (BOUND one of `bounds`): the body once per n, each copy in a block that
/// starts `let n: u32 = <n>u;`. Nested marked loops unroll too. The bodies must not
/// `break` or `continue` (they would leave the enclosing loop).
pub fn unroll(src: &str, bounds: &[(&str, usize)]) -> String {
    const MARK: &str = "// @unroll\n";
    let Some(at) = src.find(MARK) else { return src.to_string() };
    let after = &src[at + MARK.len()..];
    let line_end = after.find('\n').expect("a loop after // @unroll");
    let head = after[..line_end].trim();
    let parsed = head
        .strip_prefix("for (var ")
        .and_then(|r| r.split_once(" = 0u; "))
        .and_then(|(n, r)| Some((n, r.strip_prefix(&format!("{n} < "))?.split_once(';')?.0)));
    let Some((name, bound)) = parsed else {
        panic!("// @unroll must precede `for (var n = 0u; n < BOUND; n++) {{`, found `{head}`")
    };
    let count = bounds.iter().find(|(b, _)| *b == bound).unwrap_or_else(|| panic!("unknown loop bound {bound}")).1;
    assert!(head.ends_with('{'), "`{head}`: the loop's brace must end its line");
    // The body: from after the head's brace to its matching brace.
    let body_start = at + MARK.len() + line_end + 1;
    let end = closing_brace(src, body_start, head);
    let body = unroll(&src[body_start..end], bounds);
    assert!(!body.contains("continue;") && !body.contains("break;"), "an unrolled body may not continue or break");
    let mut out = src[..at].to_string();
    for n in 0..count {
        out += &format!("{{\nlet {name}: u32 = {n}u;\n{body}}}\n");
    }
    out += &unroll(&src[end + 1..], bounds);
    out
}

/// The loop `for (var kk = 0u; kk < NZ; kk++) { let lvl_full = ..; let lvl_first = ..; body }`
/// after a line `// @levels`, replaced by four copies with `lvl_full` and `lvl_first` as
/// constants: the first level and the rest, for a tile inside the grid and for one on its
/// edge, chosen by the run-time `full`:
///
/// ```text
/// if full { {kk = 0: body(true, true)} for kk in 1..NZ {body(true, false)} }
/// else    { {kk = 0: body(false, true)} for kk in 1..NZ {body(false, false)} }
/// ```
///
/// The first copy of each pair is a block, not a loop. `full` must be uniform over the
/// workgroup (the body holds barriers).
pub fn levels(src: &str, which: Levels) -> String {
    const MARK: &str = "// @levels\n";
    const HEAD: &str = "for (var kk = 0u; kk < NZ; kk++) {";
    let Some(at) = src.find(MARK) else { return src.to_string() };
    let after = &src[at + MARK.len()..];
    let line_end = after.find('\n').expect("a loop after // @levels");
    assert_eq!(after[..line_end].trim(), HEAD, "// @levels must precede `{HEAD}`");
    let body_start = at + MARK.len() + line_end + 1;
    let end = closing_brace(src, body_start, HEAD);
    let body = &src[body_start..end];
    let (full, first) = ("let lvl_full = full;", "let lvl_first = kk == 0u;");
    assert!(body.contains(full) && body.contains(first), "the @levels body must define lvl_full and lvl_first");
    let copy = |f: bool, k0: bool| {
        let b = if which.full { body.replace(full, &format!("const lvl_full = {f};")) } else { body.to_string() };
        if which.first {
            b.replace(first, &format!("const lvl_first = {k0};"))
        } else {
            b
        }
    };
    let pair = |f: bool| {
        if which.first {
            format!(
                "{{\nlet kk = 0u;\n{}}}\nfor (var kk = 1u; kk < NZ; kk++) {{\n{}}}\n",
                copy(f, true),
                copy(f, false)
            )
        } else {
            format!("for (var kk = 0u; kk < NZ; kk++) {{\n{}}}\n", copy(f, false))
        }
    };
    let loops = if which.full && which.whole {
        pair(true)
    } else if which.full {
        format!("if full {{\n{}}} else {{\n{}}}\n", pair(true), pair(false))
    } else {
        pair(false)
    };
    format!("{}{loops}{}", &src[..at], &src[end + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unroll_copies_each_body_with_its_index() {
        let src = "a\n// @unroll\nfor (var j = 0u; j < TY; j++) {\n    // @unroll\n    for (var i = 0u; i < TX; i++) {\n        x[j * 2u + i] = 1.0;\n    }\n}\nb\n";
        let out = unroll(src, &[("TX", 2), ("TY", 3)]);
        assert_eq!(out.matches("x[j * 2u + i] = 1.0;").count(), 6);
        assert_eq!(out.matches("let j: u32 = 2u;").count(), 1);
        assert!(out.starts_with("a\n") && out.trim_end().ends_with('b') && !out.contains("for ("));
        // The shader's marked loops all unroll: no loop over the tile is left in the kernel
        // (sweep_level_walls, before it, keeps its rolled loops).
        let s = crate::backend::wgpu::fused::source("sweep_fused", [8, 8], [30, 30, 8]);
        let kernel = &s[s.find("fn sweep_fused(").unwrap()..];
        assert!(!s.contains("// @unroll\n"));
        assert!(!kernel.contains("jj < TY") && !kernel.contains("ii < TX") && !kernel.contains("c < TXTY"));
        // The wall levels' form is rolled, written once, and the kernel calls it.
        assert_eq!(s.matches("fn sweep_level_walls(").count(), 1);
        assert_eq!(s.matches("= wall_emission(").count(), 3);
        assert!(!kernel.contains("= wall_emission(") && kernel.contains("sweep_level_walls("));
    }

    #[test]
    fn levels_copies_the_z_loop_with_constant_flags() {
        let src = "a\n// @levels\nfor (var kk = 0u; kk < NZ; kk++) {\n    let lvl_full = full;\n    let lvl_first = kk == 0u;\n    if lvl_full { x(); }\n    if lvl_first { y(); }\n}\nb\n";
        let out = levels(src, Levels { full: true, first: true, whole: false });
        assert_eq!(out.matches("x();").count(), 4);
        assert_eq!(out.matches("const lvl_full = true;").count(), 2);
        assert_eq!(out.matches("const lvl_first = true;").count(), 2);
        assert_eq!(out.matches("for (var kk = 1u; kk < NZ; kk++)").count(), 2);
        assert!(out.starts_with("a\nif full {") && out.trim_end().ends_with('b') && !out.contains("kk == 0u"));
        let one = levels(src, Levels { full: false, first: false, whole: false });
        assert_eq!(one.matches("x();").count(), 1);
        assert!(one.contains("let lvl_full = full;") && one.contains("let lvl_first = kk == 0u;"));
        let full_only = levels(src, Levels { full: true, first: false, whole: false });
        assert_eq!((full_only.matches("x();").count(), full_only.matches("kk == 0u").count()), (2, 2));
        // Whole tiles only: the two whole-tile copies, no run-time choice.
        let whole = levels(src, Levels { full: true, first: true, whole: true });
        assert_eq!(whole.matches("x();").count(), 2);
        assert_eq!(whole.matches("const lvl_full = true;").count(), 2);
        assert!(!whole.contains("lvl_full = false") && !whole.contains("if full {"));
        // The shader's own loop is marked, and its copies validate (fused.rs's test); a grid
        // the tile divides gets the whole-tile copies only.
        let s = crate::backend::wgpu::fused::source("sweep_fused", [4, 4], [30, 30, 8]);
        assert_eq!(s.matches("const lvl_first = false;").count(), 2, "the z-loop was not copied");
        let s = crate::backend::wgpu::fused::source("sweep_fused", [4, 4], [32, 28, 8]);
        assert_eq!(s.matches("const lvl_first = false;").count(), 1, "a whole-tile grid kept both copies");
        assert!(!s.contains("const lvl_full = false;"));
        // One axis divided is not enough.
        for dims in [[32, 30, 8], [30, 32, 8]] {
            let s = crate::backend::wgpu::fused::source("sweep_fused", [4, 4], dims);
            assert_eq!(s.matches("const lvl_first = false;").count(), 2, "{dims:?}: a partial tile lost its copy");
        }
    }
}
