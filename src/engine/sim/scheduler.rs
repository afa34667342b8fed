//! Continuous batching: requests wait, are admitted while the batch limit and
//! the step's token budget allow, prefill (in chunks), then decode one token
//! per step until they have their output.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::speed::Speed;

/// What a request's stream receives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    Token,
    Done {
        prompt_tokens: u32,
        completion_tokens: u32,
    },
}

/// A request handed to the scheduler.
pub struct Submission {
    pub prompt_tokens: u32,
    pub max_tokens: u32,
    pub events: mpsc::UnboundedSender<Event>,
}

struct Sequence {
    sub: Submission,
    prefilled: u32,
    generated: u32,
}

/// What the engine's `/metrics` reports, updated every step.
#[derive(Debug, Default)]
pub struct Stats {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    /// Tokens held in the KV cache by running sequences.
    pub kv_tokens: AtomicU64,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_seqs: usize,
    pub token_budget: usize,
}

/// Runs until every submitter is gone.
pub async fn run(
    mut inbox: mpsc::UnboundedReceiver<Submission>,
    limits: Limits,
    speed: Speed,
    stats: Arc<Stats>,
) {
    let mut waiting: VecDeque<Sequence> = VecDeque::new();
    let mut running: Vec<Sequence> = Vec::new();
    let mut clock = Instant::now();
    loop {
        if waiting.is_empty() && running.is_empty() {
            match inbox.recv().await {
                Some(sub) => waiting.push_back(Sequence::new(sub)),
                None => return,
            }
            clock = Instant::now();
        }
        while let Ok(sub) = inbox.try_recv() {
            waiting.push_back(Sequence::new(sub));
        }

        let mut budget = limits.token_budget;
        let decoding = running
            .iter()
            .filter(|s| s.is_decoding())
            .count()
            .min(budget);
        budget -= decoding;
        let mut prefill_tokens = 0;
        let mut prefill_plan: Vec<(usize, u32)> = Vec::new();
        for (i, seq) in running.iter().enumerate().filter(|(_, s)| !s.is_decoding()) {
            if budget == 0 {
                break;
            }
            let take = (seq.remaining_prefill() as usize).min(budget);
            prefill_plan.push((i, take as u32));
            budget -= take;
            prefill_tokens += take;
        }
        while budget > 0 && running.len() < limits.max_seqs {
            let Some(seq) = waiting.pop_front() else {
                break;
            };
            let take = (seq.remaining_prefill() as usize).min(budget);
            running.push(seq);
            prefill_plan.push((running.len() - 1, take as u32));
            budget -= take;
            prefill_tokens += take;
        }

        clock += Duration::from_secs_f64(speed.step_us(decoding, prefill_tokens) / 1e6);
        let now = Instant::now();
        if clock > now {
            tokio::time::sleep_until(clock).await;
        } else {
            // Behind (the CPU is busy): do not build up a debt of instant steps.
            clock = now;
        }

        let mut served = 0;
        for seq in running.iter_mut() {
            if seq.is_decoding() && served < decoding {
                served += 1;
                seq.emit_token();
            }
        }
        for (i, take) in prefill_plan {
            let seq = &mut running[i];
            seq.prefilled += take;
            if seq.is_decoding() {
                // The step that completes a prefill samples the first token.
                seq.emit_token();
            }
        }
        running.retain(|seq| !seq.finish_if_done());
        let kv: u64 = running
            .iter()
            .map(|s| u64::from(s.prefilled + s.generated))
            .sum();
        stats.running.store(running.len() as u64, Ordering::Relaxed);
        stats.waiting.store(waiting.len() as u64, Ordering::Relaxed);
        stats.kv_tokens.store(kv, Ordering::Relaxed);
    }
}

impl Sequence {
    fn new(sub: Submission) -> Self {
        Self {
            sub,
            prefilled: 0,
            generated: 0,
        }
    }

    fn remaining_prefill(&self) -> u32 {
        self.sub.prompt_tokens.max(1) - self.prefilled
    }

    fn is_decoding(&self) -> bool {
        self.prefilled >= self.sub.prompt_tokens.max(1)
    }

    fn emit_token(&mut self) {
        if self.generated < self.sub.max_tokens {
            self.generated += 1;
            let _ = self.sub.events.send(Event::Token);
        }
    }

    /// Sends the final event and reports true once all tokens are out, or the client left.
    fn finish_if_done(&self) -> bool {
        if self.sub.events.is_closed() {
            return true;
        }
        if self.generated < self.sub.max_tokens {
            return false;
        }
        let _ = self.sub.events.send(Event::Done {
            prompt_tokens: self.sub.prompt_tokens,
            completion_tokens: self.generated,
        });
        true
    }
}
