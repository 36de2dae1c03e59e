// Package scripted owns swarmdeck's built-in offline "model": a real
// OpenAI-compatible HTTP server, started in-process on 127.0.0.1, whose
// replies come from a Policy instead of a neural network. The runtime's LLM
// client talks to it over HTTP exactly as it talks to OpenAI, Ollama or a
// llama.cpp server, so the whole client path (streaming, tool-call
// accumulation, usage, retries) runs even offline.
//
// The package owns:
//   - the server (Server): /v1/chat/completions, streamed and not, and
//     /v1/models; latency and streaming speed that can change while it runs;
//     three wire dialects (openai, ollama, llamacpp) that frame tool calls
//     and usage the way those servers do; OpenAI-style errors; scripted
//     faults (error statuses with Retry-After, truncated streams, stalls);
//   - the policies: Demo, the default, which gives any goal a believable
//     run that exercises every swarm feature; Bench, which builds the swarm
//     `swarmdeck bench` measures (with BenchGoal, BenchShape, BenchIdeal);
//     and scenario files (LoadScenario) that script replies by role and turn.
//
// Policies are pure functions of the conversation: they read who they are
// from the system prompt and where they are from the messages, so a resumed
// run continues correctly. Every text they write starts with "[scripted
// model]" and the model id is "swarmdeck-scripted", so nobody mistakes the
// output for a real model's.
package scripted
