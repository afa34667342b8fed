//! An S3 bucket as a cache, `s3://BUCKET/PREFIX`: the directory cache's
//! tree under `PREFIX`, one object per file (`keys/<run key>.json`,
//! `blobs/sha256/<hex>`), read and written by single GET, HEAD and PUT
//! requests; nothing is ever listed, so a lookup is one GET per key. Its
//! requests are signed with AWS Signature Version 4 here, over the
//! cache's own HTTP client (no SDK: it would bring a second TLS stack and
//! a C build). (pure, but for the clock read by [`sign`])
//!
//! `?endpoint=http(s)://HOST[:PORT]` names an S3-compatible server, asked
//! path-style (`ENDPOINT/BUCKET/KEY`); without one, AWS's regional endpoint,
//! virtual-hosted (`https://BUCKET.s3.REGION.amazonaws.com/KEY`).
//! `?region=` is the signing region (`us-east-1` unless given).

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};
use sha2::Sha256;

/// The signing region when none is given (AWS's, and S3-compatible
/// servers' usual default).
const DEFAULT_REGION: &str = "us-east-1";

/// What signs a request: an access key's ID and its secret (what
/// `[credentials."HOST"]` calls `username` and the password).
pub struct AccessKey<'a> {
    pub id: &'a str,
    pub secret: &'a str,
}

/// Where the cache is in a bucket, and how to reach the bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub bucket: String,
    /// Object names' common start, without a leading or trailing `/`; may
    /// be empty.
    pub prefix: String,
    pub region: String,
    /// An S3-compatible server's `scheme://host[:port]`, asked path-style.
    pub endpoint: Option<String>,
}

impl Bucket {
    /// `BUCKET[/PREFIX][?endpoint=URL&region=NAME]`, what follows `s3://`.
    pub fn parse(rest: &str) -> Result<Self, String> {
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
        if !is_bucket_name(bucket) {
            return Err(format!(
                "`{bucket}` is not a bucket name (3 to 63 lowercase letters, digits, `.` and `-`)"
            ));
        }
        let prefix = prefix.trim_matches('/');
        if !prefix.is_empty() && !prefix.split('/').all(is_prefix_segment) {
            return Err(format!(
                "the prefix `{prefix}` may hold letters, digits, `-`, `_` and `.` between single `/` (no `.` or `..` alone)"
            ));
        }
        let mut out = Self {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            region: DEFAULT_REGION.to_owned(),
            endpoint: None,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("region", region)) if is_region(region) => region.clone_into(&mut out.region),
                Some(("endpoint", endpoint)) => out.endpoint = Some(parse_endpoint(endpoint)?),
                _ => {
                    return Err(format!(
                        "`{pair}` is not `endpoint=http(s)://HOST[:PORT]` or `region=NAME`"
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The URL of the object `path` (relative to the prefix).
    pub fn object_url(&self, path: &str) -> String {
        match self.prefix.as_str() {
            "" => format!("{}/{path}", self.base()),
            prefix => format!("{}/{prefix}/{path}", self.base()),
        }
    }

    /// The bucket's URL: where its objects' names start.
    pub fn base(&self) -> String {
        match &self.endpoint {
            Some(endpoint) => format!("{endpoint}/{}", self.bucket),
            None => format!("https://{}.s3.{}.amazonaws.com", self.bucket, self.region),
        }
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}", self.bucket)?;
        if !self.prefix.is_empty() {
            write!(f, "/{}", self.prefix)?;
        }
        let mut separator = '?';
        if let Some(endpoint) = &self.endpoint {
            write!(f, "{separator}endpoint={endpoint}")?;
            separator = '&';
        }
        if self.region != DEFAULT_REGION {
            write!(f, "{separator}region={}", self.region)?;
        }
        Ok(())
    }
}

/// S3's rule for new buckets' names, which also keeps a name a single DNS
/// label sequence in a virtual-hosted URL.
fn is_bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && !name.starts_with(['.', '-'])
        && !name.ends_with(['.', '-'])
        && !name.contains("..")
}

fn is_prefix_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_region(region: &str) -> bool {
    !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// `http(s)://host[:port]`, without path, query or login.
fn parse_endpoint(text: &str) -> Result<String, String> {
    let bad = || format!("the endpoint `{text}` is not `http(s)://HOST[:PORT]`");
    let url = Url::parse(text).map_err(|_| bad())?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    if !plain {
        return Err(bad());
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The hash of an empty payload, as GET and HEAD sign it.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Signs `request` for `region`'s S3 with `key` at the real time now (a
/// server refuses a signature more than minutes from its own clock, so
/// `PERFPIPE_NOW` does not apply). The payload's hash is the
/// `x-amz-content-sha256` the caller set (a blob's digest), else that of
/// the body's bytes, else the empty payload's.
pub fn sign(request: &mut reqwest::Request, region: &str, key: &AccessKey<'_>) {
    let amz_date = amz_date(crate::clock::real_unix_now());
    let payload = match request.headers().get("x-amz-content-sha256") {
        Some(hash) => hash.to_str().unwrap_or_default().to_owned(),
        None => match request.body().and_then(reqwest::Body::as_bytes) {
            Some(bytes) => crate::digest::sha256_hex(bytes),
            None => EMPTY_SHA256.to_owned(),
        },
    };
    let headers = request.headers_mut();
    headers.insert(
        HeaderName::from_static("x-amz-content-sha256"),
        HeaderValue::from_str(&payload).expect("a hex digest is a header value"),
    );
    headers.insert(
        HeaderName::from_static("x-amz-date"),
        HeaderValue::from_str(&amz_date).expect("a date is a header value"),
    );
    let signed: Vec<(String, String)> = ["x-amz-content-sha256", "x-amz-date"]
        .iter()
        .map(|name| ((*name).to_owned(), header(request, name)))
        .collect();
    let authorization = authorization(
        request.method().as_str(),
        request.url(),
        &signed,
        &payload,
        &amz_date,
        &Scope {
            region,
            service: "s3",
        },
        key,
    );
    request.headers_mut().insert(
        reqwest::header::AUTHORIZATION,
        HeaderValue::from_str(&authorization).expect("a signature is a header value"),
    );
}

fn header(request: &reqwest::Request, name: &str) -> String {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Where a signature is valid: a region's service.
struct Scope<'a> {
    region: &'a str,
    service: &'a str,
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time.
fn amz_date(unix: u64) -> String {
    crate::clock::rfc3339(unix).replace(['-', ':'], "")
}

/// The `Authorization` header of Signature Version 4 for `method url`,
/// signing `Host` (from the URL) and `headers` (lowercase names, values as
/// sent), with the payload's hash and the `x-amz-date` given.
fn authorization(
    method: &str,
    url: &Url,
    headers: &[(String, String)],
    payload_sha256: &str,
    amz_date: &str,
    scope: &Scope<'_>,
    key: &AccessKey<'_>,
) -> String {
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let mut signed: Vec<(String, String)> = headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
        .chain([("host".to_owned(), host)])
        .collect();
    signed.sort();
    let names = signed
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = signed
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect();
    let canonical = format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{names}\n{payload_sha256}",
        uri_encode(url.path(), true),
        canonical_query(url),
    );
    let day = &amz_date[..8];
    let credential_scope = format!("{day}/{}/{}/aws4_request", scope.region, scope.service);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        crate::digest::sha256_hex(canonical.as_bytes())
    );
    let mut signing_key = hmac(format!("AWS4{}", key.secret).as_bytes(), day.as_bytes());
    for part in [scope.region, scope.service, "aws4_request"] {
        signing_key = hmac(&signing_key, part.as_bytes());
    }
    let signature = hex::encode(hmac(&signing_key, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={names}, Signature={signature}",
        key.id
    )
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// The query's pairs, each name and value encoded, sorted.
fn canonical_query(url: &Url) -> String {
    let mut pairs: Vec<String> = url
        .query_pairs()
        .map(|(name, value)| format!("{}={}", uri_encode(&name, false), uri_encode(&value, false)))
        .collect();
    pairs.sort();
    pairs.join("&")
}

/// Every byte but RFC 3986's unreserved ones as `%XX` (and `/` kept, in a
/// path); a `%XX` the URL already holds stays as it is.
fn uri_encode(text: &str, path: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (i, &b) in bytes.iter().enumerate() {
        let escaped = path
            && b == b'%'
            && bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') || escaped {
            out.push(b as char);
        } else if path && b == b'/' {
            out.push('/');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `<Code>` of an S3 error's XML body (`NoSuchBucket`,
/// `SignatureDoesNotMatch`), when it has one of letters only.
pub fn error_code(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let start = text.find("<Code>")? + "<Code>".len();
    let code = &text[start..start + text[start..].find("</Code>")?];
    (!code.is_empty() && code.len() <= 64 && code.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| code.to_owned())
}

/// Why an S3 server refused a request, from its error's code and whether
/// credentials were sent: the signature (key ID, secret, region, clock) or
/// the account's rights.
pub fn denied_because(code: Option<&str>, sent: bool) -> String {
    match code {
        _ if !sent => "it wants credentials, and none are configured for it".to_owned(),
        // AWS says the first; s3s-fs the second (AWS: an account without S3).
        Some("InvalidAccessKeyId" | "NotSignedUp") => {
            "it knows no such access key ID (`username`), or that key's account may not use S3"
                .to_owned()
        }
        Some("SignatureDoesNotMatch") => "the signature does not match: the secret access key (`password-env` or `password-file`) is not this access key's, or the region is not the bucket's".to_owned(),
        Some("RequestTimeTooSkewed") => "this machine's clock is too far from the server's".to_owned(),
        _ => "the access key was accepted, but may not do this (the account's rights on the bucket)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's published examples: the Signature Version 4 test suite
    /// (`get-vanilla`, `get-vanilla-query-order-key-case`: service
    /// `service`) and the S3 API reference's "GET Object" (a range of
    /// `test.txt` in `examplebucket`).
    #[test]
    fn signatures_match_aws_published_examples() {
        let suite = AccessKey {
            id: "AKIDEXAMPLE",
            secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        };
        let service = Scope {
            region: "us-east-1",
            service: "service",
        };
        let date = "20150830T123600Z";
        let headers = [("X-Amz-Date".to_owned(), date.to_owned())];
        let vanilla = authorization(
            "GET",
            &Url::parse("https://example.amazonaws.com/").unwrap(),
            &headers,
            EMPTY_SHA256,
            date,
            &service,
            &suite,
        );
        assert_eq!(
            vanilla,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        let query_order = authorization(
            "GET",
            &Url::parse("https://example.amazonaws.com/?Param2=value2&Param1=value1").unwrap(),
            &headers,
            EMPTY_SHA256,
            date,
            &service,
            &suite,
        );
        assert!(
            query_order.ends_with(
                "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
            ),
            "{query_order}"
        );
        let s3 = AccessKey {
            id: "AKIAIOSFODNN7EXAMPLE",
            secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        };
        let date = "20130524T000000Z";
        let get_object = authorization(
            "GET",
            &Url::parse("https://examplebucket.s3.amazonaws.com/test.txt").unwrap(),
            &[
                ("Range".to_owned(), "bytes=0-9".to_owned()),
                ("x-amz-content-sha256".to_owned(), EMPTY_SHA256.to_owned()),
                ("x-amz-date".to_owned(), date.to_owned()),
            ],
            EMPTY_SHA256,
            date,
            &Scope {
                region: "us-east-1",
                service: "s3",
            },
            &s3,
        );
        assert_eq!(
            get_object,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn dates_paths_and_queries_are_written_as_signatures_want_them() {
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(uri_encode("/a b/$x~%2F", true), "/a%20b/%24x~%2F");
        assert_eq!(uri_encode("a/b", false), "a%2Fb");
        let url = Url::parse("http://h/?b=2&a=x%20y&a=1").unwrap();
        assert_eq!(canonical_query(&url), "a=1&a=x%20y&b=2");
    }

    #[test]
    fn a_bucket_is_named_with_its_prefix_endpoint_and_region() {
        let local =
            Bucket::parse("team-cache/perf/results?endpoint=http://127.0.0.1:9000/").unwrap();
        assert_eq!(local.base(), "http://127.0.0.1:9000/team-cache");
        assert_eq!(
            local.object_url("keys/k.json"),
            "http://127.0.0.1:9000/team-cache/perf/results/keys/k.json"
        );
        assert_eq!(
            local.to_string(),
            "s3://team-cache/perf/results?endpoint=http://127.0.0.1:9000"
        );
        let aws = Bucket::parse("team-cache?region=eu-west-1").unwrap();
        assert_eq!(
            aws.object_url("k"),
            "https://team-cache.s3.eu-west-1.amazonaws.com/k"
        );
        assert_eq!(aws.to_string(), "s3://team-cache?region=eu-west-1");
        for bad in [
            "Team",
            "ab",
            "b..c",
            "bucket/../x",
            "bucket/a b",
            "bucket?endpoint=ftp://h",
            "bucket?endpoint=http://u:p@h",
            "bucket?endpoint=http://h/path",
            "bucket?region=EU",
            "bucket?acl=public",
            "evil.example/x?endpoint=http://h#frag",
        ] {
            assert!(Bucket::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_error_code_is_read_from_the_xml_and_nothing_else() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message></Error>";
        assert_eq!(error_code(body).as_deref(), Some("SignatureDoesNotMatch"));
        assert_eq!(error_code(b"<Code><script></Code>"), None);
        assert_eq!(error_code(b"not xml"), None);
        assert!(denied_because(Some("SignatureDoesNotMatch"), true).contains("secret access key"));
        assert!(
            denied_because(Some("SignatureDoesNotMatch"), false).contains("none are configured")
        );
        assert!(denied_because(Some("AccessDenied"), true).contains("rights"));
        assert!(denied_because(Some("NotSignedUp"), true).contains("no such access key ID"));
    }
}
