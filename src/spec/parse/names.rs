//! The grammar of values that reach other programs: image references
//! (docker's argv), environment names (an engine's environment), model ids
//! (an engine's argv, the Hub's URLs, cache paths) and versions (image tags).
//! A value outside its grammar is refused where it is written: `image="--privileged"`
//! would be a docker flag, `env "A=B"="x"` another variable.

/// An OCI image reference as docker reads it:
/// `[registry[:port]/]path[:tag][@algorithm:digest]`.
pub fn image_reference(text: &str) -> Result<(), String> {
    if text.starts_with('-') {
        return Err(format!(
            "`{text}` is not an image reference: docker would read it as an option"
        ));
    }
    let (name, digest) = match text.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (text, None),
    };
    let (name, tag) = match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => (&name[..i], Some(&name[i + 1..])),
        _ => (name, None),
    };
    let mut components: Vec<&str> = name.split('/').collect();
    if components.len() > 1
        && (components[0].contains(['.', ':']) || components[0] == "localhost")
        && !registry(components[0])
    {
        return Err(format!("`{}` is not a registry host", components[0]));
    }
    if components.len() > 1 && (components[0].contains(['.', ':']) || components[0] == "localhost")
    {
        components.remove(0);
    }
    if let Some(bad) = components.iter().find(|c| !path_component(c)) {
        return Err(if bad.is_empty() {
            "the image's name has an empty part".to_owned()
        } else {
            format!(
                "`{bad}` is not a part of an image name (lowercase letters and digits, joined by `.`, `_`, `__` or `-`)"
            )
        });
    }
    if let Some(tag) = tag
        && !is_tag(tag)
    {
        return Err(format!(
            "`{tag}` is not an image tag (letters, digits, `_`, `.` and `-`, not first `.` or `-`, 128 at most)"
        ));
    }
    if let Some(digest) = digest
        && !is_digest(digest)
    {
        return Err(format!(
            "`{digest}` is not an image digest such as `sha256:<hex>`"
        ));
    }
    Ok(())
}

fn registry(host: &str) -> bool {
    let (domain, port) = match host.rsplit_once(':') {
        Some((domain, port)) => (domain, Some(port)),
        None => (host, None),
    };
    let label = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    domain.split('.').all(label)
        && port
            .is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn path_component(c: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let b = c.as_bytes();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let sep = b[i..].iter().take_while(|&&x| !alnum(x)).count();
        let s = &c[i..i + sep];
        if !(s == "." || s == "_" || s == "__" || s.bytes().all(|x| x == b'-')) {
            return false;
        }
        i += sep;
    }
    true
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`
fn is_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// `algorithm:encoded`, e.g. `sha256:<64 hex>`.
fn is_digest(digest: &str) -> bool {
    let Some((algorithm, encoded)) = digest.split_once(':') else {
        return false;
    };
    !algorithm.is_empty()
        && algorithm
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+._-".contains(&b))
        && algorithm
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && !encoded.is_empty()
        && encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"=_-".contains(&b))
}

/// An environment variable's name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn env_name(name: &str) -> Result<(), String> {
    let ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else if name.is_empty() {
        Err("an environment variable's name is empty".to_owned())
    } else {
        Err(format!(
            "`{name}` is not an environment variable's name (letters, digits and `_`, not first a digit)"
        ))
    }
}

/// A model: a Hugging Face id `org/name` (letters, digits, `-`, `_`, `.`;
/// no part `.` or `..`; 96 characters a part at most, as the Hub allows), or
/// the absolute path of a local model directory without `..`.
pub fn model_id(id: &str) -> Result<(), String> {
    if id.starts_with('/') {
        return if id.split('/').any(|p| p == "..") || id.contains('\0') {
            Err(format!(
                "`{id}` goes up with `..`; name the model directory itself"
            ))
        } else {
            Ok(())
        };
    }
    let part = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && p != "."
            && p != ".."
            && !p.starts_with(['-', '.'])
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    match id.split_once('/') {
        Some((org, name)) if part(org) && part(name) => Ok(()),
        _ if id.is_empty() => Err("the model id is empty".to_owned()),
        _ => Err(format!(
            "`{id}` is not a Hugging Face model id `org/name` nor an absolute path"
        )),
    }
}

/// A version as images tag it and engines print it: `0.11.0`, `1.2.0rc1`,
/// `0.5.5.post1`.
pub fn version(version: &str) -> Result<(), String> {
    let ok = version.len() <= 128
        && version
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    if ok {
        Ok(())
    } else if version.is_empty() {
        Err("the version is empty".to_owned())
    } else {
        Err(format!(
            "`{version}` is not a version (letters, digits, `.`, `_`, `+` and `-`, first a letter or digit)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_follow_docker() {
        for good in [
            "vllm/vllm-openai:v0.11.0",
            "ubuntu",
            "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc1",
            "localhost:5000/x/y:t",
            "127.0.0.1:5000/y@sha256:ab",
            "lmsysorg/sglang:v0.5.5.post1-cu126",
            "a__b/c---d.e_f",
        ] {
            assert_eq!(image_reference(good), Ok(()), "{good}");
        }
        for bad in [
            "--privileged",
            "-v/:/host",
            "",
            "a b:c",
            "x/../y:z",
            "x:",
            "X/y",
            "x/y:-t",
            "x@sha256",
            "x/y;rm",
            "-reg.io/x",
            "x//y",
        ] {
            assert!(image_reference(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn env_names_models_and_versions() {
        assert!(env_name("VLLM_USE_V1").is_ok() && env_name("_x1").is_ok());
        for bad in ["", "A=B", "1A", "A B", "é"] {
            assert!(env_name(bad).is_err(), "{bad}");
        }
        for good in [
            "Qwen/Qwen3-14B",
            "Qwen/Qwen3-14B-FP8",
            "a_b/c.d",
            "/models/qwen",
        ] {
            assert_eq!(model_id(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "../../../etc/passwd",
            "Qwen",
            "a/b/c",
            "./x",
            "a/..",
            "/m/../etc",
            "-x/y",
            "a/b c",
        ] {
            assert!(model_id(bad).is_err(), "{bad}");
        }
        for good in ["0.11.0", "1.2.0rc1", "0.5.5.post1", "0.11.0+cu128"] {
            assert_eq!(version(good), Ok(()), "{good}");
        }
        for bad in ["", "-1", " 1", "1 2", "1/2", "v1;x"] {
            assert!(version(bad).is_err(), "{bad}");
        }
    }
}
