// exp64 and pow2: e^x in f64 from +, -, *, / and conversions only, for the kernels that run
// in f64 (cell_records_f64.wgsl, and the slice kernels under real_f64.wgsl): the builtin exp
// is not usable on f64 (lavapipe's returns garbage, NVIDIA's is f32-accurate:
// ../shared/platform-facts.md). Appended by the host (src/backend/wgpu/shaders.rs).
// Keep the literals in sync with src/backend/wgpu/records_f64.rs (a test compares them).

// 2^n, exactly, by binary powers (no f64 ldexp or bitcast needed).
fn pow2(n: i32) -> f64 {
    var s = 1.0lf;
    var b = select(2.0lf, 0.5lf, n < 0);
    var k = u32(abs(n));
    while k != 0u {
        if (k & 1u) != 0u {
            s *= b;
        }
        b *= b;
        k >>= 1u;
    }
    return s;
}

// e^x: x = n ln 2 + r with |r| <= ln(2) / 2 (Cody and Waite's two-part ln 2, whose high part
// has trailing zeros so that n ln2_hi is exact), e^r by its Taylor series to r^13 (the
// remainder below 4e-18 relative), times 2^n. A few ulps of f64. Below -708 the result
// would be subnormal or zero; it is 0 here (far below any weight it is added to).
fn exp64(x: f64) -> f64 {
    if x < -708.0lf {
        return 0.0lf;
    }
    let y = x * 1.4426950408889634lf;
    let n = i32(y + select(-0.5lf, 0.5lf, y >= 0.0lf));
    let nf = f64(n);
    let r = (x - nf * 6.93147180369123816490e-01lf) - nf * 1.90821492927058770002e-10lf;
    var p = 1.0lf / 6227020800.0lf;
    p = p * r + 1.0lf / 479001600.0lf;
    p = p * r + 1.0lf / 39916800.0lf;
    p = p * r + 1.0lf / 3628800.0lf;
    p = p * r + 1.0lf / 362880.0lf;
    p = p * r + 1.0lf / 40320.0lf;
    p = p * r + 1.0lf / 5040.0lf;
    p = p * r + 1.0lf / 720.0lf;
    p = p * r + 1.0lf / 120.0lf;
    p = p * r + 1.0lf / 24.0lf;
    p = p * r + 1.0lf / 6.0lf;
    p = p * r + 0.5lf;
    p = p * r + 1.0lf;
    p = p * r + 1.0lf;
    return p * pow2(n);
}
