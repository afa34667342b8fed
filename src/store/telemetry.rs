//! A sample's telemetry (`logs/telemetry.jsonl`), read back a line at a
//! time for the report's GPU charts: a day-long run on 8 GPUs writes some
//! 700,000 GPU lines, and a report reads one such file per configuration.

use std::io::{BufRead, BufReader, Read};

use super::{Error, Sample};
use crate::metrics::telemetry::{GpuTimeline, TELEMETRY_FILE, read_gpu_line};

/// The longest line read: perfpipe's are some 300 bytes; the rest of a
/// longer one is skipped, not held.
const MAX_LINE: u64 = 64 << 10;

impl Sample {
    /// Where its telemetry is (when it has some).
    pub fn telemetry_path(&self) -> std::path::PathBuf {
        self.dir.join("logs").join(TELEMETRY_FILE)
    }

    /// Its GPU series, averaged over its GPUs into a [`GpuTimeline`]; empty
    /// when it has none (imports, `sim`, CPU machines, samples stored before
    /// GPU lines were timed).
    pub fn gpu_timeline(&self) -> Result<GpuTimeline, Error> {
        let mut timeline = GpuTimeline::default();
        let file = match super::files::open(&self.telemetry_path()) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(timeline),
            Err(e) => return Err(e.into()),
        };
        each_line(BufReader::new(file), |line| {
            if let Some(reading) = read_gpu_line(&String::from_utf8_lossy(line)) {
                timeline.add(&reading);
            }
        })?;
        Ok(timeline)
    }
}

/// Calls `each` with every line of `reader` (without its newline) of at most
/// [`MAX_LINE`] bytes, holding one line at a time.
fn each_line(mut reader: impl BufRead, mut each: impl FnMut(&[u8])) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if n as u64 == MAX_LINE {
            // Too long: skipped to its end.
            loop {
                let buf = reader.fill_buf()?;
                let (used, ended) = match buf.iter().position(|&b| b == b'\n') {
                    Some(at) => (at + 1, true),
                    None => (buf.len(), buf.is_empty()),
                };
                reader.consume(used);
                if ended {
                    break;
                }
            }
            continue;
        }
        each(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::telemetry::{GpuLine, GpuSample, telemetry_line};
    use crate::store::testing::*;

    #[test]
    fn a_long_line_is_skipped_and_the_rest_read() {
        let long = "x".repeat(MAX_LINE as usize * 2 + 5);
        let text = format!("a\n{long}\nb\nc");
        let mut lines = Vec::new();
        each_line(BufReader::with_capacity(7, text.as_bytes()), |l| {
            lines.push(String::from_utf8_lossy(l).into_owned())
        })
        .unwrap();
        assert_eq!(lines, ["a", "b", "c"]);
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes the telemetry a run would have written"
    )]
    fn a_samples_gpu_series_reads_back_as_its_timeline() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"telemetry":1}"#);
        let sample = store.samples(&key).unwrap().remove(0);
        assert!(
            sample.gpu_timeline().unwrap().is_empty(),
            "no file, no series"
        );
        let gpu = |index, power_w| GpuSample {
            index,
            power_w,
            sm_clock_mhz: 1410.0,
            temperature_c: 60.0,
            throttle_reasons: "0x0000000000000004".into(),
            memory_used_mib: 1.0,
            utilization_pct: 90.0,
        };
        let text = [
            telemetry_line(0.0, "process", &serde_json::json!({"processes": 1})),
            telemetry_line(1.0, "gpu", &GpuLine::of(&gpu(0, 300.0))),
            telemetry_line(1.0, "gpu", &GpuLine::of(&gpu(1, f64::NAN))),
            telemetry_line(2.0, "gpu", &GpuLine::of(&gpu(0, 400.0))),
            telemetry_line(2.0, "gpu", &GpuLine::of(&gpu(1, 200.0))),
            // An older sample's line, without a time: not plotted.
            "{\"gpu\":{\"index\":0,\"power_w\":1.0}}\n".to_owned(),
            "{\"t_s\":3.0,\"gpu\":{\"ind".to_owned(),
        ]
        .concat();
        std::fs::write(sample.dir.join("logs/telemetry.jsonl"), text).unwrap();
        let timeline = sample.gpu_timeline().unwrap();
        assert_eq!(timeline.power_w(), [(1.0, 300.0), (2.0, 300.0)]);
        assert_eq!(timeline.utilization_pct(), [(1.0, 90.0), (2.0, 90.0)]);
    }
}
