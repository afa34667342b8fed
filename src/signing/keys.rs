//! Ed25519 signing keys written as Nix writes its binary-cache keys:
//! `NAME:base64`, the secret holding the 32-byte seed and the public half
//! (64 bytes), the public key its 32 bytes. (pure, but for `generate`)

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

/// A key's text that is not `NAME:base64` of the right length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{shown}` is not a {what} key written `NAME:base64` ({why})")]
pub struct KeyError {
    shown: String,
    what: &'static str,
    why: String,
}

/// A public key that signatures are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub name: String,
    key: VerifyingKey,
}

/// A secret key that `cache push` signs with.
#[derive(Debug)]
pub struct SecretKey {
    pub name: String,
    key: SigningKey,
}

/// Names are what people read in reports: no `:` (the separator), no
/// spaces, not empty (as Nix's `cache.example.org-1`).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@+".contains(&b))
}

/// `NAME:base64` split and decoded to `N` bytes; the error says why
/// without quoting the text (it may be a secret, or whatever file was named).
fn split<const N: usize>(text: &str) -> Result<(String, [u8; N]), Malformed> {
    let (name, encoded) = text.trim().split_once(':').ok_or(Malformed::NoColon)?;
    if !valid_name(name) {
        return Err(Malformed::Name);
    }
    let bytes = STANDARD.decode(encoded).map_err(|_| Malformed::NotBase64)?;
    let bytes: [u8; N] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| Malformed::Length(b.len(), N))?;
    Ok((name.to_owned(), bytes))
}

/// Why a key's text is not `NAME:base64` of the right length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Malformed {
    NoColon,
    Name,
    NotBase64,
    /// Bytes decoded, bytes wanted.
    Length(usize, usize),
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoColon => f.write_str("no `:`"),
            Self::Name => f.write_str("its name is not letters, digits and `._-@+`"),
            Self::NotBase64 => f.write_str("what follows the `:` is not base64"),
            Self::Length(64, 32) => f.write_str(
                "64 bytes, not 32: a secret key's length; trust the line of its `.public` file",
            ),
            Self::Length(got, wanted) => write!(f, "{got} bytes, not {wanted}"),
        }
    }
}

/// Why a secret key's text is not one; never its text, nor a part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotASecretKey(pub String);

impl PublicKey {
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        // Named, not quoted: what was given as a public key may be a secret
        // key's text (64 bytes) or a password pasted in the wrong place.
        let shown = match text.trim().split_once(':') {
            Some((name, _)) if valid_name(name) => format!("{name}:…"),
            _ => "…".to_owned(),
        };
        let error = |why: String| KeyError {
            shown: shown.clone(),
            what: "public",
            why,
        };
        let (name, bytes) = split::<32>(text).map_err(|why| error(why.to_string()))?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|e| error(e.to_string()))?;
        Ok(Self { name, key })
    }

    /// Whether `signature` (base64) is this key's signature of `message`.
    pub fn verifies(&self, message: &str, signature: &str) -> bool {
        let Ok(bytes) = STANDARD.decode(signature) else {
            return false;
        };
        let Ok(signature) = Signature::from_slice(&bytes) else {
            return false;
        };
        self.key.verify(message.as_bytes(), &signature).is_ok()
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.name, STANDARD.encode(self.key.as_bytes()))
    }
}

impl SecretKey {
    /// A new key named `name` from the operating system's randomness.
    pub fn generate(name: &str) -> Result<Self, KeyError> {
        if !valid_name(name) {
            return Err(KeyError {
                shown: name.to_owned(),
                what: "key name: a",
                why: "a name is letters, digits and `._-@+`".into(),
            });
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the operating system provides randomness");
        Ok(Self {
            name: name.to_owned(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads `NAME:base64(seed ‖ public)`; the public half must be the seed's.
    pub fn parse(text: &str) -> Result<Self, NotASecretKey> {
        let (name, bytes) = split::<64>(text).map_err(|why| NotASecretKey(why.to_string()))?;
        let key = SigningKey::from_keypair_bytes(&bytes)
            .map_err(|_| NotASecretKey("its public half is not its seed's".into()))?;
        Ok(Self { name, key })
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            name: self.name.clone(),
            key: self.key.verifying_key(),
        }
    }

    /// The base64 signature of `message`.
    pub fn sign(&self, message: &str) -> String {
        STANDARD.encode(self.key.sign(message.as_bytes()).to_bytes())
    }

    /// The text written to the secret key file.
    pub fn to_text(&self) -> String {
        format!(
            "{}:{}",
            self.name,
            STANDARD.encode(self.key.to_keypair_bytes())
        )
    }
}

/// The public keys whose signatures a command accepts, by name.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys(Vec<PublicKey>);

impl TrustedKeys {
    pub fn new(keys: Vec<PublicKey>) -> Self {
        Self(keys)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The trusted key named `name`, if its bytes are `key`'s too.
    pub fn trusts(&self, key: &PublicKey) -> bool {
        self.0.contains(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_under_its_public_key_only() {
        let alice = SecretKey::generate("alice-1").unwrap();
        let bob = SecretKey::generate("bob").unwrap();
        let signature = alice.sign("statement");
        assert!(alice.public().verifies("statement", &signature));
        assert!(!alice.public().verifies("statement2", &signature));
        assert!(!bob.public().verifies("statement", &signature));
        assert!(!alice.public().verifies("statement", "not base64!"));
    }

    #[test]
    fn keys_round_trip_through_their_text_like_nix_keys() {
        let secret = SecretKey::generate("team.example-1").unwrap();
        let again = SecretKey::parse(&secret.to_text()).unwrap();
        assert_eq!(again.public(), secret.public());
        let public = secret.public().to_string();
        assert!(public.starts_with("team.example-1:"), "{public}");
        assert_eq!(public.len(), "team.example-1:".len() + 44);
        assert_eq!(PublicKey::parse(&public).unwrap(), secret.public());
    }

    #[test]
    fn malformed_keys_are_refused_with_why_and_no_secret_shown() {
        let e = PublicKey::parse("alice").unwrap_err().to_string();
        assert!(e.contains("no `:`"), "{e}");
        let e = PublicKey::parse("alice:AAAA").unwrap_err().to_string();
        assert!(e.contains("3 bytes, not 32"), "{e}");
        let e = PublicKey::parse("a b:AAAA").unwrap_err().to_string();
        assert!(e.contains("`…`") && e.contains("its name"), "{e}");
        let secret = SecretKey::generate("alice").unwrap().to_text();
        let e = PublicKey::parse(&secret).unwrap_err().to_string();
        assert!(
            e.contains("`alice:…`") && e.contains("a secret key's length"),
            "{e}"
        );
        assert!(!e.contains(&secret[6..20]), "{e}");
        let secret = SecretKey::generate("alice").unwrap().to_text();
        let mut tampered = secret.clone();
        tampered.pop();
        tampered.push(if secret.ends_with('A') { 'B' } else { 'A' });
        let e = SecretKey::parse(&tampered).unwrap_err().0;
        assert!(
            !e.contains(&secret[7..20]),
            "a secret stays out of messages: {e}"
        );
        // Whatever file was named, no part of its text is shown.
        for text in [
            "hunter2-registry-password:xyz",
            "hunter2-registry-password",
            "hunter2 registry:AAAA",
            "alice:hunter2-is-not-base64!",
        ] {
            let NotASecretKey(why) = SecretKey::parse(text).unwrap_err();
            assert!(!why.contains("hunter2") && !why.contains("xyz"), "{why}");
        }
        assert!(SecretKey::generate("no:colon").is_err());
    }

    #[test]
    fn trust_is_by_name_and_bytes() {
        let alice = SecretKey::generate("alice").unwrap().public();
        let impostor = SecretKey::generate("alice").unwrap().public();
        let trusted = TrustedKeys::new(vec![alice.clone()]);
        assert!(trusted.trusts(&alice));
        assert!(!trusted.trusts(&impostor));
    }
}
