//! An S3 bucket as a cache, `s3://BUCKET/PREFIX`: the directory cache's
//! tree under `PREFIX`, one object per file (`keys/<run key>.json`,
//! `blobs/sha256/<hex>`), read and written by single GET, HEAD and PUT
//! requests; nothing is ever listed, so a lookup is one GET per key. Its
//! requests are signed with AWS Signature Version 4 here, over the
//! cache's own HTTP client (no SDK: it would bring a second TLS stack and
//! a C build). (pure, but for the clock read by [`sign`] and the
//! variables read by [`Bucket::parse`])
//!
//! `?endpoint=http(s)://HOST[:PORT]` names an S3-compatible server, asked
//! path-style (`ENDPOINT/BUCKET/KEY`); without one, AWS's regional endpoint,
//! virtual-hosted (`https://BUCKET.s3.REGION.amazonaws.com/KEY`).
//! `?region=` is the signing region. What the URL leaves out comes from
//! the environment as every AWS SDK reads it: the endpoint from
//! `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` (both skipped when
//! `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS` is `true`); the region from
//! `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`. The location
//! then shows what was taken, so its messages name the server asked.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};
use sha2::Sha256;

use super::credentials::KeyOrigin;

/// The signing region when none is given (AWS's, and S3-compatible
/// servers' usual default).
const DEFAULT_REGION: &str = "us-east-1";

/// What signs a request: an access key's ID and its secret (what
/// `[credentials."HOST"]` calls `username` and the password), and the
/// session token of temporary credentials (STS, SSO), sent as
/// `x-amz-security-token` and signed.
pub struct AccessKey<'a> {
    pub id: &'a str,
    pub secret: &'a str,
    pub session_token: Option<&'a str>,
}

/// The variables that name an S3 endpoint, the first set winning: the
/// service's own over every service's (AWS SDKs and Tools reference guide,
/// "Service-specific endpoints").
const ENDPOINT_VARS: [&str; 2] = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"];

/// When `true`, the variables above are not read.
const IGNORE_ENDPOINTS_VAR: &str = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS";

/// The variables that name the region, the first set winning (AWS SDKs and
/// Tools reference guide, "AWS Region").
const REGION_VARS: [&str; 2] = ["AWS_REGION", "AWS_DEFAULT_REGION"];

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
    /// `BUCKET[/PREFIX][?endpoint=URL&region=NAME]`, what follows `s3://`,
    /// with the endpoint and region it leaves out from this process's
    /// environment.
    pub fn parse(rest: &str) -> Result<Self, String> {
        Self::parse_in(rest, |name| std::env::var(name).ok())
    }

    /// [`Self::parse`], with `var` as the environment (a variable set but
    /// empty counts as unset, as the SDKs have it).
    fn parse_in(rest: &str, var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
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
        let mut region = None;
        let mut endpoint = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("region", name)) if is_region(name) => region = Some(name.to_owned()),
                Some(("endpoint", url)) => endpoint = Some(parse_endpoint(url)?),
                _ => {
                    return Err(format!(
                        "`{pair}` is not `endpoint=http(s)://HOST[:PORT]` or `region=NAME`"
                    ));
                }
            }
        }
        let ignore_endpoints =
            var(IGNORE_ENDPOINTS_VAR).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if endpoint.is_none() && !ignore_endpoints {
            endpoint = from_first(
                &ENDPOINT_VARS,
                var,
                |url| parse_endpoint(url).ok(),
                "`http(s)://HOST[:PORT]`",
            )?;
        }
        if region.is_none() {
            region = from_first(
                &REGION_VARS,
                var,
                |name| is_region(name).then(|| name.to_owned()),
                "a region's name (`eu-west-1`)",
            )?;
        }
        Ok(Self {
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            region: region.unwrap_or_else(|| DEFAULT_REGION.to_owned()),
            endpoint,
        })
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

/// The value of the first of `names` that `var` holds, read by `read`; an
/// error naming the variable when it holds something else than `what`
/// (not quoting it: an endpoint's URL may hold a login).
fn from_first(
    names: &[&str],
    var: impl Fn(&str) -> Option<String>,
    read: impl Fn(&str) -> Option<String>,
    what: &str,
) -> Result<Option<String>, String> {
    let Some((name, value)) = names.iter().find_map(|name| Some((*name, var(name)?))) else {
        return Ok(None);
    };
    read(&value)
        .map(Some)
        .ok_or_else(|| format!("the environment's `{name}` is not {what}"))
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
    sign_at(request, region, key, crate::clock::real_unix_now());
}

/// [`sign`] at the Unix time `unix`.
fn sign_at(request: &mut reqwest::Request, region: &str, key: &AccessKey<'_>, unix: u64) {
    let amz_date = amz_date(unix);
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
    let mut names = vec!["x-amz-content-sha256", "x-amz-date"];
    if let Some(token) = key.session_token {
        // S3 wants it signed with the rest (header-based authentication).
        let mut value = HeaderValue::from_str(token)
            .expect("a session token is checked to be visible ASCII where it is read");
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static("x-amz-security-token"), value);
        names.push("x-amz-security-token");
    }
    let signed: Vec<(String, String)> = names
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

/// Why an S3 server refused a request, from its error's code and where
/// the access key came from (`None`: none was sent): the signature (key
/// ID, secret, region, clock), the session token, or the account's rights.
pub fn denied_because(code: Option<&str>, from: Option<KeyOrigin>, host: &str) -> String {
    let Some(from) = from else {
        return "it wants credentials, and none are configured for it".to_owned();
    };
    let (id, secret, token) = match from {
        KeyOrigin::Config => (
            "`username`",
            "`password-env` or `password-file`",
            "`session-token-env` or `session-token-file`",
        ),
        KeyOrigin::Environment => (
            "`AWS_ACCESS_KEY_ID`",
            "`AWS_SECRET_ACCESS_KEY`",
            "`AWS_SESSION_TOKEN`",
        ),
    };
    let said = match code {
        // AWS says the first; s3s-fs the second (AWS: an account without S3).
        Some("InvalidAccessKeyId" | "NotSignedUp") => {
            format!("it knows no such access key ID ({id}), or that key's account may not use S3")
        }
        Some("SignatureDoesNotMatch") => format!(
            "the signature does not match: the secret access key ({secret}) is not this access key's, or the region is not the bucket's"
        ),
        Some("InvalidToken" | "ExpiredToken" | "TokenRefreshRequired") => format!(
            "the session token ({token}) is not valid or has expired; get new temporary credentials"
        ),
        Some("RequestTimeTooSkewed") => {
            "this machine's clock is too far from the server's".to_owned()
        }
        _ => {
            "the access key was accepted, but may not do this (the account's rights on the bucket)"
                .to_owned()
        }
    };
    match from {
        KeyOrigin::Config => {
            format!("{said} (the access key of `[credentials.\"{host}\"]` in your config.toml)")
        }
        KeyOrigin::Environment => format!(
            "{said} (the access key from the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`)"
        ),
    }
}

/// Where an S3 cache's access key goes, said after a refusal: `host`'s
/// section, or the environment, and which wins.
pub fn where_keys_go(host: &str, from: Option<KeyOrigin>) -> String {
    let section = format!(
        "under `[credentials.\"{host}\"]` in your config.toml, `username` (the access key ID) with `password-env` (the variable holding the secret access key) or `password-file`, and for temporary credentials `session-token-env` or `session-token-file`"
    );
    let region = "`?region=` (else `AWS_REGION`, else `AWS_DEFAULT_REGION`) names the bucket's region (docs/result-cache.md)";
    match from {
        Some(KeyOrigin::Environment) => format!(
            "with no `[credentials.\"{host}\"]` in your config.toml, an s3:// cache signs with `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (temporary credentials) from the environment; a section there wins ({section}); {region}"
        ),
        _ => format!(
            "an s3:// cache signs with an access key: {section}, which wins over `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` in the environment, read when there is no section; {region}"
        ),
    }
}

/// An environment of `pairs` only, for [`Bucket::parse_in`] and the
/// credentials' tests.
#[cfg(test)]
pub(super) fn vars(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
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
            session_token: None,
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
            session_token: None,
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

    /// The Signature Version 4 test suite's `post-sts-token/post-sts-header-before`:
    /// a session token signed as the `X-Amz-Security-Token` header (as S3
    /// wants it, in the canonical request).
    #[test]
    fn a_session_token_is_signed_as_aws_published_example_has_it() {
        let token = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";
        let date = "20150830T123600Z";
        let signed = authorization(
            "POST",
            &Url::parse("https://example.amazonaws.com/").unwrap(),
            &[
                ("X-Amz-Date".to_owned(), date.to_owned()),
                ("X-Amz-Security-Token".to_owned(), token.to_owned()),
            ],
            EMPTY_SHA256,
            date,
            &Scope {
                region: "us-east-1",
                service: "service",
            },
            &AccessKey {
                id: "AKIDEXAMPLE",
                secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                session_token: Some(token),
            },
        );
        assert_eq!(
            signed,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"
        );
    }

    /// What [`sign`] adds for temporary credentials: the token as
    /// `x-amz-security-token`, among the signed headers. The signature was
    /// computed apart from this code, with Python's standard library:
    ///
    /// ```text
    /// import hmac, hashlib
    /// e = hashlib.sha256(b"").hexdigest()
    /// tok = "FQoGZXIvYXdzEXAMPLE/session+token=="
    /// creq = ("GET\n/team-cache/keys/k.json\n\nhost:127.0.0.1:9000\nx-amz-content-sha256:" + e +
    ///         "\nx-amz-date:20130524T000000Z\nx-amz-security-token:" + tok +
    ///         "\n\nhost;x-amz-content-sha256;x-amz-date;x-amz-security-token\n" + e)
    /// sts = "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/eu-west-1/s3/aws4_request\n" + hashlib.sha256(creq.encode()).hexdigest()
    /// k = b"AWS4wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    /// for p in ["20130524", "eu-west-1", "s3", "aws4_request"]:
    ///     k = hmac.new(k, p.encode(), hashlib.sha256).digest()
    /// print(hmac.new(k, sts.encode(), hashlib.sha256).hexdigest())
    /// ```
    #[test]
    fn a_request_with_a_session_token_carries_it_signed() {
        let token = "FQoGZXIvYXdzEXAMPLE/session+token==";
        let key = AccessKey {
            id: "AKIAIOSFODNN7EXAMPLE",
            secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            session_token: Some(token),
        };
        let url = Url::parse("http://127.0.0.1:9000/team-cache/keys/k.json").unwrap();
        let mut request = reqwest::Request::new(reqwest::Method::GET, url);
        sign_at(&mut request, "eu-west-1", &key, 1_369_353_600);
        assert_eq!(header(&request, "x-amz-security-token"), token);
        assert!(request.headers()["x-amz-security-token"].is_sensitive());
        assert_eq!(
            header(&request, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/eu-west-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=e3657d727de74856e88248760f024f66376bb65e4e5d6cb6456122fb10a2e75b"
        );
        let mut plain = reqwest::Request::new(reqwest::Method::GET, request.url().clone());
        let without = AccessKey {
            session_token: None,
            ..key
        };
        sign_at(&mut plain, "eu-west-1", &without, 1_369_353_600);
        assert!(plain.headers().get("x-amz-security-token").is_none());
        assert!(
            header(&plain, "authorization")
                .contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date,")
        );
    }

    #[test]
    fn what_the_url_leaves_out_comes_from_the_aws_variables() {
        let all: &[(&str, &str)] = &[
            ("AWS_ENDPOINT_URL_S3", "http://s3.cluster:9000"),
            ("AWS_ENDPOINT_URL", "http://everything:1"),
            ("AWS_REGION", "eu-west-2"),
            ("AWS_DEFAULT_REGION", "ap-south-1"),
        ];
        let bucket = Bucket::parse_in("team-cache/p", vars(all)).unwrap();
        assert_eq!(bucket.base(), "http://s3.cluster:9000/team-cache");
        assert_eq!(bucket.region, "eu-west-2");
        // The location says what was taken, so its messages name it.
        assert_eq!(
            bucket.to_string(),
            "s3://team-cache/p?endpoint=http://s3.cluster:9000&region=eu-west-2"
        );
        // The URL's own win.
        let own =
            Bucket::parse_in("team-cache?endpoint=http://h:2&region=us-west-1", vars(all)).unwrap();
        assert_eq!(
            (own.base().as_str(), own.region.as_str()),
            ("http://h:2/team-cache", "us-west-1")
        );
        // The general ones, when the specific ones are unset or empty.
        let general = Bucket::parse_in(
            "team-cache",
            vars(&[
                ("AWS_ENDPOINT_URL_S3", ""),
                ("AWS_ENDPOINT_URL", "https://minio.lab"),
                ("AWS_DEFAULT_REGION", "ap-south-1"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (general.base().as_str(), general.region.as_str()),
            ("https://minio.lab/team-cache", "ap-south-1")
        );
        let ignored = Bucket::parse_in(
            "team-cache",
            vars(&[
                ("AWS_ENDPOINT_URL", "http://h:1"),
                ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (ignored.endpoint, ignored.region.as_str()),
            (None, "us-east-1")
        );
        let bad = Bucket::parse_in("team-cache", vars(&[("AWS_ENDPOINT_URL_S3", "ftp://h")]))
            .unwrap_err();
        assert!(
            bad.contains("`AWS_ENDPOINT_URL_S3` is not `http(s)://HOST[:PORT]`"),
            "{bad}"
        );
        let bad = Bucket::parse_in("team-cache", vars(&[("AWS_REGION", "EU West")])).unwrap_err();
        assert!(bad.contains("`AWS_REGION`"), "{bad}");
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
        let parse = |rest: &str| Bucket::parse_in(rest, |_| None);
        let local = parse("team-cache/perf/results?endpoint=http://127.0.0.1:9000/").unwrap();
        assert_eq!(local.base(), "http://127.0.0.1:9000/team-cache");
        assert_eq!(
            local.object_url("keys/k.json"),
            "http://127.0.0.1:9000/team-cache/perf/results/keys/k.json"
        );
        assert_eq!(
            local.to_string(),
            "s3://team-cache/perf/results?endpoint=http://127.0.0.1:9000"
        );
        let aws = parse("team-cache?region=eu-west-1").unwrap();
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
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_error_code_is_read_from_the_xml_and_nothing_else() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message></Error>";
        assert_eq!(error_code(body).as_deref(), Some("SignatureDoesNotMatch"));
        assert_eq!(error_code(b"<Code><script></Code>"), None);
        assert_eq!(error_code(b"not xml"), None);
        let config = Some(KeyOrigin::Config);
        let env = Some(KeyOrigin::Environment);
        let wrong_secret = denied_because(Some("SignatureDoesNotMatch"), config, "h:1");
        assert!(
            wrong_secret.contains("secret access key (`password-env`"),
            "{wrong_secret}"
        );
        assert!(
            wrong_secret.contains("`[credentials.\"h:1\"]`"),
            "{wrong_secret}"
        );
        let wrong_secret = denied_because(Some("SignatureDoesNotMatch"), env, "h:1");
        assert!(
            wrong_secret.contains("secret access key (`AWS_SECRET_ACCESS_KEY`)"),
            "{wrong_secret}"
        );
        assert!(
            wrong_secret.contains("access key from the environment"),
            "{wrong_secret}"
        );
        assert!(
            denied_because(Some("SignatureDoesNotMatch"), None, "h:1")
                .contains("none are configured")
        );
        assert!(denied_because(Some("AccessDenied"), config, "h:1").contains("rights"));
        assert!(
            denied_because(Some("NotSignedUp"), config, "h:1")
                .contains("no such access key ID (`username`)")
        );
        assert!(denied_because(Some("ExpiredToken"), env, "h:1").contains("`AWS_SESSION_TOKEN`"));
        let expired = denied_because(Some("ExpiredToken"), config, "h:1");
        assert!(
            expired.contains("session token (`session-token-env` or `session-token-file`)")
                && !expired.contains("AWS_SESSION_TOKEN"),
            "{expired}"
        );
        assert!(where_keys_go("h:1", env).starts_with("with no `[credentials.\"h:1\"]`"));
    }
}
