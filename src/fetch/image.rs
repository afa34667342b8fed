//! Container images: present when `docker image inspect` knows the pinned
//! reference, else `docker pull`ed by digest (docker checks the digest).

use std::time::Duration;

use crate::external;

const INSPECT_TIMEOUT: Duration = Duration::from_secs(60);
/// An engine image is tens of GB; a pull that takes longer than this is stuck.
const PULL_TIMEOUT: Duration = Duration::from_secs(4 * 3600);

/// Whether docker has `image`; an error when docker cannot be asked.
pub async fn present(image: &str) -> Result<bool, String> {
    let output = external::output("docker", &["image", "inspect", image], INSPECT_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    Ok(output.status.success())
}

/// Pulls `image`, its progress going to stderr.
pub async fn pull(image: &str) -> Result<(), String> {
    external::run_to_stderr("docker", &["pull", image], PULL_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    if !present(image).await? {
        return Err(format!(
            "`docker pull {image}` succeeded, but `docker image inspect` does not find it"
        ));
    }
    Ok(())
}
