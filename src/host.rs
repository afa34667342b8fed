//! The name of this machine, for provenance (`PERFPIPE_HOST` overrides it).

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
