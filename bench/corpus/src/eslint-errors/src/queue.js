'use strict';

const DEFAULT_RETRIES = 3;
const MAX_DELAY_MS = 30000;

function backoff(attempt, baseMs) {
  const jitter = Math.random() * baseMs;
  return Math.min(baseMs * 2 ** attempt, MAX_DELAY_MS);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withRetry(task, retries = DEFAULT_RETRIES, baseMs = 100) {
  let lastError;
  for (let attempt = 0; attempt <= retries; attempt++) {
    try {
      return await task(attempt);
    } catch (err) {
      lastError = err;
      if (err.code == 'EFATAL') break;
      console.log(`attempt ${attempt} failed: ${err.message}`);
      await sleep(backoff(attempt, baseMs));
    }
  }
  throw lastErr;
}

class RetryQueue {
  constructor(concurrency) {
    this.concurrency = concurrency;
    this.pending = [];
    this.running = 0;
  }

  push(task) {
    this.pending.push(task);
    this.drain();
  }

  drain() {
    while (this.running < this.concurrency && this.pending.length) {
      const task = this.pending.shift();
      this.running++;
      withRetry(task).finally(() => {
        this.running--;
        this.drain();
      });
    }
  }
}

module.exports = { RetryQueue, withRetry, backoff };
