//! `bench history report`'s page in a real browser: Debian's Chromium,
//! headless, takes a screenshot of it; the screenshot shows the charts (the
//! first machine's points, the second's, the change point's marker, in
//! their colours) and the browser's console says nothing (no error, no
//! resource it could not load). The console check is shown to catch an
//! error on a page that has one.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// The colours of history_plot.rs: the first machine, the second, a change.
const FIRST_MACHINE: [u8; 3] = [0x1f, 0x77, 0xb4];
const SECOND_MACHINE: [u8; 3] = [0xd6, 0x27, 0x28];
const CHANGE: [u8; 3] = [0xb0, 0x00, 0x20];

fn chromium() -> PathBuf {
    for path in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(path).exists() {
            return PathBuf::from(path);
        }
    }
    panic!("chromium is not installed: `sudo scripts/install-deps.sh --browser` installs it (the test command does)");
}

/// Opens `page` in headless Chromium (a fresh profile, nothing from the
/// network) and takes a screenshot: the PNG's bytes, and the console lines
/// of its log.
fn screenshot(page: &Path, dir: &Path) -> (Vec<u8>, Vec<String>) {
    let png = dir.join("shot.png");
    let profile = dir.join("profile");
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1000,1400",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chromium failed: {log}");
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (
        fs::read(&png).expect("chromium wrote the screenshot"),
        console,
    )
}

/// An 8-bit RGB or RGBA PNG's pixels, as RGB: enough of PNG for a
/// screenshot (one IDAT stream, the five row filters).
fn pixels(png: &[u8]) -> Vec<[u8; 3]> {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut at, mut data) = (8, Vec::new());
    let (mut width, mut channels) = (0usize, 0usize);
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let body = &png[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
                assert_eq!(body[8], 8, "8-bit channels");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("colour type {other}"),
                };
            }
            b"IDAT" => data.extend_from_slice(body),
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&data[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = width * channels;
    let mut prev = vec![0u8; stride];
    let mut out = Vec::new();
    for row in raw.chunks(stride + 1) {
        let (filter, line) = (row[0], &row[1..]);
        let mut cur = vec![0u8; stride];
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => paeth(a, b, c),
                other => panic!("filter {other}"),
            };
            cur[i] = line[i].wrapping_add(predicted);
        }
        out.extend(cur.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        prev = cur;
    }
    out
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

fn count(pixels: &[[u8; 3]], colour: [u8; 3]) -> usize {
    pixels
        .iter()
        .filter(|p| p.iter().zip(colour).all(|(&x, y)| x.abs_diff(y) <= 12))
        .count()
}

/// A history of two machines' series of one benchmark, the first with a
/// step down at its 15th entry.
fn two_machines(dir: &Path) -> PathBuf {
    let db = dir.join("h.sqlite");
    for (machine, values) in [
        ("lab", [100.0, 101.0, 99.0, 100.5, 99.5].repeat(3)),
        ("desk", [80.0, 81.0, 79.5, 80.5, 79.0].repeat(2)),
    ] {
        let mut values = values;
        if machine == "lab" {
            values.extend([90.0, 89.0, 91.0, 90.5, 89.5, 90.0, 89.8, 90.2]);
        }
        let files: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let file = dir.join(format!("{machine}-{i}.json"));
                fs::write(
                    &file,
                    format!(r#"{{"probe": {{"throughput": {{"value": {v}}}}}}}"#),
                )
                .unwrap();
                file.display().to_string()
            })
            .collect();
        for (i, file) in files.iter().enumerate() {
            let at = format!("@{}", 1_800_000_000 + i * 3600);
            let label = format!("machine={machine}");
            let out = run(&[
                "history",
                "--history",
                db.to_str().unwrap(),
                "add",
                "--at",
                &at,
                "--label",
                &label,
                file,
            ]);
            assert_eq!(out.code, 0, "{}", out.stderr);
        }
    }
    db
}

#[test]
fn the_page_shows_its_charts_in_chromium_with_a_quiet_console() {
    let dir = tempdir("history-page");
    let db = two_machines(&dir);
    let site = dir.join("site");
    let out = run(&[
        "history",
        "--history",
        db.to_str().unwrap(),
        "report",
        site.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_has(&out.stdout, "2 series, 1 change point");
    let html = fs::read_to_string(site.join("index.html")).unwrap();
    assert!(!html.contains("<script"), "the page has no script");
    for fetch in ["src=\"http", "href=\"http", "url(http"] {
        assert!(
            !html.contains(fetch),
            "the page fetches from elsewhere: {fetch}"
        );
    }
    assert_has(&html, "regression");

    let (png, console) = screenshot(&site.join("index.html"), &dir);
    assert!(console.is_empty(), "the console said: {console:?}");
    let pixels = pixels(&png);
    assert_eq!(pixels.len(), 1000 * 1400, "the window's size");
    for (what, colour, at_least) in [
        ("the first machine's points", FIRST_MACHINE, 200),
        ("the second machine's points", SECOND_MACHINE, 100),
        ("the change point's marker", CHANGE, 100),
    ] {
        let seen = count(&pixels, colour);
        assert!(seen >= at_least, "{what}: {seen} pixels of {colour:?}");
    }
}

#[test]
fn the_console_check_sees_an_error() {
    let dir = tempdir("history-page-error");
    let page = dir.join("error.html");
    fs::write(&page, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"></head><body><script>console.error('deliberate');</script></body></html>").unwrap();
    let (_, console) = screenshot(&page, &dir);
    assert!(
        console.iter().any(|l| l.contains("deliberate")),
        "{console:?}"
    );
}
