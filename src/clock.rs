//! Wall-clock time, read in one place so tests can fix it (`PERFPIPE_NOW`).

/// Seconds since the Unix epoch, or `PERFPIPE_NOW` when set.
#[expect(
    clippy::disallowed_methods,
    reason = "the one reader of the wall clock"
)]
pub fn unix_now() -> u64 {
    if let Some(fixed) = std::env::var("PERFPIPE_NOW")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return fixed;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Nanoseconds since the Unix epoch on the real wall clock, which file
/// timestamps come from: never fixed by `PERFPIPE_NOW`, as what it is
/// compared with (a file's mtime) is not.
#[expect(
    clippy::disallowed_methods,
    reason = "the one reader of the wall clock"
)]
pub fn file_time_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Seconds since the Unix epoch on the real wall clock, never fixed by
/// `PERFPIPE_NOW`: for what another machine checks against its own clock
/// (the date an S3 request's signature carries).
pub fn real_unix_now() -> u64 {
    (file_time_ns() / 1_000_000_000) as u64
}

/// Nanoseconds on CLOCK_MONOTONIC, which every process on the machine shares:
/// a test server stamps its writes with it so the client can measure its own delay.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the struct we pass.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a Unix time.
pub fn rfc3339(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// `YYYYMMDD-HHMMSS`, as `vllm bench serve` dates its result files.
pub fn compact(unix: u64) -> String {
    let iso = rfc3339(unix);
    format!(
        "{}{}{}-{}{}{}",
        &iso[0..4],
        &iso[5..7],
        &iso[8..10],
        &iso[11..13],
        &iso[14..16],
        &iso[17..19]
    )
}

/// `after` past `from`, at most 30 years (tokio's own far future): a
/// timeout never overflows the clock, whatever its length.
pub fn deadline(from: tokio::time::Instant, after: std::time::Duration) -> tokio::time::Instant {
    const FAR: std::time::Duration = std::time::Duration::from_secs(86_400 * 365 * 30);
    from.checked_add(after.min(FAR)).unwrap_or(from)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_utc() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_290_164), "2026-11-21T19:42:44Z");
        assert_eq!(super::compact(1_795_290_164), "20261121-194244");
    }

    #[test]
    fn a_deadline_of_any_length_is_an_instant() {
        use std::time::Duration;
        let now = tokio::time::Instant::now();
        assert_eq!(
            super::deadline(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(super::deadline(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365));
        assert!(super::deadline(now, Duration::from_secs(u64::MAX)) > now);
    }
}
