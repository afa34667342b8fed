//! The gaps between a request's chunks, kept compact: 12,000 requests of
//! 1,024 tokens hold 12 million of them. Each gap is its exact number of
//! nanoseconds (what the monotonic clock measured) as a LEB128 varint, so
//! a gap inside one network read takes 1 byte and a 20 ms gap 4, where an
//! `f64` took 8; it reads back as the very `f64` seconds
//! `Duration::as_secs_f64` gave, so no number moves.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Gaps in the order they were measured.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Gaps {
    varints: Vec<u8>,
    len: usize,
}

impl Gaps {
    pub fn push(&mut self, gap: Duration) {
        self.push_nanos(u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn push_nanos(&mut self, mut nanos: u64) {
        loop {
            let low = (nanos & 0x7f) as u8;
            nanos >>= 7;
            if nanos == 0 {
                self.varints.push(low);
                break;
            }
            self.varints.push(low | 0x80);
        }
        self.len += 1;
    }

    /// Gives back the room kept for more gaps, once the request has ended.
    pub fn shrink_to_fit(&mut self) {
        self.varints.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each gap in nanoseconds.
    pub fn nanos(&self) -> impl Iterator<Item = u64> + Clone + '_ {
        let mut bytes = self.varints.iter();
        std::iter::from_fn(move || {
            let mut value = 0_u64;
            let mut shift = 0;
            loop {
                let byte = *bytes.next()?;
                value |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return Some(value);
                }
                shift += 7;
            }
        })
    }

    /// Each gap in seconds, as `Duration::as_secs_f64` gives it.
    pub fn secs(&self) -> impl Iterator<Item = f64> + Clone + '_ {
        self.nanos().map(nanos_to_secs)
    }

    /// Gaps given in seconds, each to the nearest nanosecond (a journal's,
    /// or a test's); what [`Gaps::secs`] wrote reads back unchanged.
    pub fn from_secs(secs: &[f64]) -> Self {
        let mut gaps = Self::default();
        for s in secs {
            gaps.push_nanos((s.max(0.0) * 1e9).round() as u64);
        }
        gaps
    }
}

/// Nanoseconds as the seconds `Duration::as_secs_f64` gives.
pub fn nanos_to_secs(nanos: u64) -> f64 {
    Duration::from_nanos(nanos).as_secs_f64()
}

impl std::fmt::Debug for Gaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.secs()).finish()
    }
}

/// Written as vLLM writes `itls`: a list of seconds.
impl Serialize for Gaps {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.secs())
    }
}

impl<'de> Deserialize<'de> for Gaps {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::from_secs(&Vec::<f64>::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_read_back_as_the_seconds_the_clock_gave() {
        let measured = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(127),
            Duration::from_nanos(128),
            Duration::from_micros(20_013) + Duration::from_nanos(7),
            Duration::from_secs(4) + Duration::from_nanos(294_967_297),
            Duration::from_secs(3 * 3600) + Duration::from_nanos(999_999_999),
        ];
        let mut gaps = Gaps::default();
        for d in measured {
            gaps.push(d);
        }
        gaps.shrink_to_fit();
        assert_eq!(gaps.len(), measured.len());
        let expected: Vec<f64> = measured.iter().map(Duration::as_secs_f64).collect();
        assert_eq!(gaps.secs().collect::<Vec<_>>(), expected);
        // Bit for bit through the journal's JSON too.
        let json = serde_json::to_string(&gaps).unwrap();
        assert_eq!(json, serde_json::to_string(&expected).unwrap());
        assert_eq!(serde_json::from_str::<Gaps>(&json).unwrap(), gaps);
        // A gap inside one read takes a byte, a 20 ms gap four.
        assert_eq!(gaps.varints.len(), 1 + 1 + 1 + 2 + 4 + 5 + 7);
    }
}
