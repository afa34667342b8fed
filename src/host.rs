//! This machine and this process: its name for provenance (`PERFPIPE_HOST`
//! overrides it), and the CPU time and peak memory a benchmark client spent.

pub fn name() -> String {
    if let Ok(host) = std::env::var("PERFPIPE_HOST") {
        return host;
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer outlives the call and its length is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// CPU seconds (user + system) this process has used so far.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The most resident memory this process has held (`VmHWM`), when the
/// system says (Linux).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_hwm(&status)
}

fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// Wall and CPU time taken over one window, so that a share of a core
/// divides the CPU time by the wall time it was spent in.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    wall: std::time::Instant,
    cpu: f64,
}

/// What a [`Window`] measured, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub wall: f64,
    pub cpu: f64,
}

impl Window {
    pub fn start() -> Self {
        Self {
            wall: std::time::Instant::now(),
            cpu: cpu_seconds(),
        }
    }

    pub fn finish(self) -> Usage {
        Usage {
            cpu: cpu_seconds() - self.cpu,
            wall: self.wall.elapsed().as_secs_f64(),
        }
    }
}

impl Usage {
    /// CPU time as a percentage of one core over the window.
    pub fn percent_of_one_core(self) -> f64 {
        100.0 * self.cpu / self.wall.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_a_core_divides_cpu_by_the_wall_time_of_the_same_window() {
        let usage = Usage {
            wall: 2.0,
            cpu: 1.5,
        };
        assert_eq!(usage.percent_of_one_core(), 75.0);
        assert_eq!(
            Usage {
                wall: 0.0,
                cpu: 0.0
            }
            .percent_of_one_core(),
            0.0
        );
    }

    #[test]
    fn peak_rss_is_read_from_vm_hwm() {
        let status = "Name:\tperfpipe\nVmPeak:\t  900 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(vm_hwm(status), Some(12345 * 1024));
        assert_eq!(vm_hwm("Name:\tx\n"), None);
    }

    #[test]
    fn a_window_counts_cpu_spent_inside_it_only() {
        let before = cpu_seconds();
        // CPU spent before the window starts is not counted in it.
        while cpu_seconds() - before < 0.05 {}
        let window = Window::start();
        let usage = window.finish();
        assert!(usage.cpu < 0.05, "{usage:?}");
        assert!(usage.wall < 0.05, "{usage:?}");
    }
}
