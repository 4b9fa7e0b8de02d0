//! Timing of the generators and the topology file writer and parser on the largest fabrics
//! we generate. Run: `cargo bench -p fabric --bench netfile` (prints medians of 5 runs).

use fabric::GenSpec;
use fabric::netfile::{parse, write};
use std::time::{Duration, Instant};

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[2]
}

fn main() {
    for spec in [
        "ft2:36",
        "ft3:36",
        "ft3:48",
        "torus:16x16x16",
        "random:4096:seed=7",
    ] {
        let spec: GenSpec = spec.parse().expect("valid spec");
        let t = spec.generate().expect("generates");
        let text = write(&t).expect("writes");
        let gen_time = median(|| {
            std::hint::black_box(spec.generate().expect("generates"));
        });
        let write_time = median(|| {
            std::hint::black_box(write(&t).expect("writes"));
        });
        let parse_time = median(|| {
            std::hint::black_box(parse(&text).expect("parses"));
        });
        println!(
            "{:<20} {:>6} nodes {:>6} links {:>6.1} MB  generate {:>7.1} ms  write {:>7.1} ms  parse {:>7.1} ms",
            spec.to_string(),
            t.len(),
            t.num_links(),
            text.len() as f64 / 1e6,
            gen_time.as_secs_f64() * 1e3,
            write_time.as_secs_f64() * 1e3,
            parse_time.as_secs_f64() * 1e3,
        );
    }
}
