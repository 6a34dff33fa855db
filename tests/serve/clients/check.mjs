// check.mjs — the official client libraries (the `openai` and `ollama` npm
// packages, pinned in package-lock.json), used unchanged as a user would,
// against `sbsim serve`:
//
//   node check.mjs [--openai [LABEL=]URL]... [--ollama [LABEL=]URL]...
//                  [--fail [LABEL=]URL]... [--model NAME] [--tokens N]
//
// --openai URL: an emulator (any --kind) whose OpenAI API (URL/v1) the
//   openai client lists, completes and chats with, streamed and not.
// --ollama URL: an emulator started with --kind ollama, whose Ollama API
//   the ollama client lists, asks the version and the loaded models of,
//   generates and chats with, streamed and not.
// --fail URL: an emulator started with --fail-rate 1 --fail-kind
//   rate_limit: each library raises its own error for the 429.
//
// Prints one line per check ("ok   ..." or "FAIL ...: why") and exits 1
// when any check failed, 2 on bad arguments. Must run from a directory
// where `openai` and `ollama` resolve (ESM imports ignore NODE_PATH).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { Ollama } from 'ollama';

const usage = 'usage: node check.mjs [--openai [LABEL=]URL]... [--ollama [LABEL=]URL]... ' +
	'[--fail [LABEL=]URL]... [--model NAME] [--tokens N]';
let args;
try {
	args = parseArgs({
		options: {
			openai: { type: 'string', multiple: true, default: [] },
			ollama: { type: 'string', multiple: true, default: [] },
			fail: { type: 'string', multiple: true, default: [] },
			model: { type: 'string', default: 'sbsim' },
			tokens: { type: 'string', default: '7' },
		},
	}).values;
} catch (e) {
	console.error(`check.mjs: ${e.message}\n${usage}`);
	process.exit(2);
}
const MODEL = args.model;
const N = Number(args.tokens);
if (!Number.isInteger(N) || N < 1 || N > 1000 ||
    args.openai.length + args.ollama.length + args.fail.length === 0) {
	console.error(usage);
	process.exit(2);
}
const TIMEOUT_MS = 30000; // each check

/* "label=url" or "url" -> { label, url } (the URL without a trailing /). */
function target(s) {
	const m = /^([A-Za-z0-9_.-]+)=(.*)$/.exec(s);
	const url = (m ? m[2] : s).replace(/\/+$/, '');
	return { label: m ? m[1] : url, url };
}

let failures = 0;
let checks = 0;

/* Runs one check (an async function that throws on failure, may return a
 * detail string), printing its line. */
async function check(name, fn) {
	checks++;
	let timer;
	const timeout = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no answer in ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
	});
	try {
		const detail = await Promise.race([fn(), timeout]);
		console.log(`ok   ${name}${detail ? `: ${detail}` : ''}`);
	} catch (e) {
		failures++;
		const what = e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e);
		console.log(`FAIL ${name}: ${what}`);
		if (process.env.CHECK_VERBOSE && e instanceof Error && e.stack)
			console.log(e.stack);
	} finally {
		clearTimeout(timer);
	}
}

function assert(cond, msg) {
	if (!cond)
		throw new Error(msg);
}

function eq(got, want, what) {
	assert(got === want, `${what}: got ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
}

/* The emulator's token rule: one output token is one word (with a
 * leading space), so a text of n tokens has n words. */
function words(text) {
	const t = text.trim();
	return t ? t.split(/\s+/).length : 0;
}

function checkUsage(u, what) {
	assert(u && typeof u === 'object', `${what}: no usage`);
	eq(u.completion_tokens, N, `${what}: usage.completion_tokens`);
	assert(Number.isInteger(u.prompt_tokens) && u.prompt_tokens > 0,
	       `${what}: usage.prompt_tokens ${u.prompt_tokens} is not a positive integer`);
	eq(u.total_tokens, u.prompt_tokens + u.completion_tokens, `${what}: usage.total_tokens`);
}

/* The error fn throws: the class (cls, or a name), and the status. */
async function expectError(fn, isWanted, wantName) {
	let got;
	try {
		const r = await fn();
		// A stream: the error may only show when it is read.
		if (r && typeof r[Symbol.asyncIterator] === 'function')
			for await (const _ of r);
	} catch (e) {
		got = e;
	}
	assert(got !== undefined, `no error raised (expected ${wantName})`);
	if (!isWanted(got))
		throw new Error(`raised ${got?.constructor?.name} ${JSON.stringify(got?.name)} ` +
				`(status ${got?.status ?? got?.status_code}): ${got?.message}; ` +
				`expected ${wantName}`);
	return got;
}

/* ---- the openai client ---------------------------------------------------- */

async function openaiChecks({ label, url }) {
	const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0,
				    timeout: TIMEOUT_MS });
	const tag = `openai[${label}]`;
	const prompt = 'Write a short note about the client libraries';
	const messages = [
		{ role: 'system', content: 'You are terse.' },
		{ role: 'user', content: 'Say something about the client libraries.' },
	];
	let text, content;

	await check(`${tag} models.list`, async () => {
		const ids = [];
		for await (const m of client.models.list()) {
			eq(m.object, 'model', 'model.object');
			ids.push(m.id);
		}
		assert(ids.includes(MODEL), `models ${JSON.stringify(ids)} lack ${MODEL}`);
		return ids.join(',');
	});

	await check(`${tag} completions.create`, async () => {
		const r = await client.completions.create({ model: MODEL, prompt, max_tokens: N });
		eq(r.object, 'text_completion', 'object');
		eq(r.model, MODEL, 'model');
		assert(typeof r.id === 'string' && r.id, 'no id');
		eq(r.choices.length, 1, 'choices');
		eq(r.choices[0].finish_reason, 'length', 'finish_reason');
		text = r.choices[0].text;
		assert(typeof text === 'string', 'choices[0].text is not a string');
		eq(words(text), N, `words of ${JSON.stringify(text)}`);
		checkUsage(r.usage, 'completion');
		return JSON.stringify(text);
	});

	await check(`${tag} completions.create stream`, async () => {
		const stream = await client.completions.create({
			model: MODEL, prompt, max_tokens: N, stream: true,
			stream_options: { include_usage: true },
		});
		let streamed = '', chunks = 0, finish = null, usage = null;
		for await (const c of stream) {
			eq(c.object, 'text_completion', 'chunk object');
			if (c.usage)
				usage = c.usage;
			for (const ch of c.choices) {
				if (ch.finish_reason) {
					finish = ch.finish_reason;
					eq(ch.text ?? '', '', 'text of the finishing chunk');
				} else {
					chunks++;
					streamed += ch.text;
				}
			}
		}
		eq(chunks, N, 'token chunks');
		eq(finish, 'length', 'finish_reason');
		checkUsage(usage, 'streamed completion');
		if (text !== undefined)
			eq(streamed, text, 'streamed text (the concatenated chunks) vs the whole answer');
		return `${chunks} chunks`;
	});

	await check(`${tag} chat.completions.create`, async () => {
		const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: N });
		eq(r.object, 'chat.completion', 'object');
		eq(r.model, MODEL, 'model');
		eq(r.choices.length, 1, 'choices');
		const c = r.choices[0];
		eq(c.finish_reason, 'length', 'finish_reason');
		eq(c.message.role, 'assistant', 'message.role');
		content = c.message.content;
		assert(typeof content === 'string', 'message.content is not a string');
		eq(words(content), N, `words of ${JSON.stringify(content)}`);
		checkUsage(r.usage, 'chat');
		return JSON.stringify(content);
	});

	await check(`${tag} chat.completions.create stream include_usage`, async () => {
		const stream = await client.chat.completions.create({
			model: MODEL, messages, max_tokens: N, stream: true,
			stream_options: { include_usage: true },
		});
		let streamed = '', chunks = 0, finish = null, usage = null, role = null, last = null;
		let id = null;
		for await (const c of stream) {
			eq(c.object, 'chat.completion.chunk', 'chunk object');
			id ??= c.id;
			eq(c.id, id, 'chunk id (the same in every chunk)');
			last = c;
			if (c.usage)
				usage = c.usage;
			for (const ch of c.choices) {
				role ??= ch.delta.role ?? null;
				if (typeof ch.delta.content === 'string' && ch.delta.content !== '') {
					chunks++;
					streamed += ch.delta.content;
				}
				if (ch.finish_reason)
					finish = ch.finish_reason;
			}
		}
		eq(role, 'assistant', 'delta.role of the first chunk');
		eq(chunks, N, 'content chunks');
		eq(finish, 'length', 'finish_reason');
		assert(last && last.usage && last.choices.length === 0,
		       'the last chunk is not the usage chunk (choices [] and usage)');
		checkUsage(usage, 'streamed chat');
		eq(words(streamed), N, `words of ${JSON.stringify(streamed)}`);
		if (content !== undefined)
			eq(streamed, content, 'streamed text (the concatenated deltas) vs the whole answer');
		return `${chunks} chunks`;
	});

	await check(`${tag} chat.completions.stream helper`, async () => {
		const runner = client.chat.completions.stream({
			model: MODEL, messages, max_tokens: N, stream_options: { include_usage: true },
		});
		let deltas = '', events = 0;
		runner.on('content', (delta) => { deltas += delta; events++; });
		const final = await runner.finalChatCompletion();
		const c = final.choices[0];
		eq(c.finish_reason, 'length', 'finish_reason');
		eq(c.message.role, 'assistant', 'message.role');
		eq(events, N, 'content events');
		eq(c.message.content, deltas, 'final content vs the content events');
		if (content !== undefined)
			eq(c.message.content, content, 'final content vs the whole answer');
		checkUsage(final.usage, 'final chat completion');
		return `${events} content events`;
	});
}

/* ---- the ollama client ---------------------------------------------------- */

/* The done part's counts and durations (ns). */
function checkDone(r, what) {
	eq(r.done, true, `${what}: done`);
	eq(r.done_reason, 'length', `${what}: done_reason`);
	eq(r.model, MODEL, `${what}: model`);
	eq(r.eval_count, N, `${what}: eval_count`);
	assert(Number.isInteger(r.prompt_eval_count) && r.prompt_eval_count > 0,
	       `${what}: prompt_eval_count ${r.prompt_eval_count} is not a positive integer`);
	for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration'])
		assert(Number.isInteger(r[k]) && r[k] > 0, `${what}: ${k} ${r[k]} is not a positive integer`);
	assert(r.total_duration >= r.eval_duration,
	       `${what}: total_duration ${r.total_duration} < eval_duration ${r.eval_duration}`);
	assert(r.total_duration >= r.prompt_eval_duration + r.eval_duration,
	       `${what}: total_duration ${r.total_duration} < prompt_eval_duration ` +
	       `${r.prompt_eval_duration} + eval_duration ${r.eval_duration}`);
	assert(!Number.isNaN(Date.parse(r.created_at)), `${what}: created_at ${r.created_at}`);
	return `eval_count ${r.eval_count}, prompt_eval_count ${r.prompt_eval_count}, ` +
	       `total ${(r.total_duration / 1e6).toFixed(1)} ms, eval ${(r.eval_duration / 1e6).toFixed(1)} ms`;
}

/* Reads a streamed answer: the text of the parts before the done one
 * (part -> its text), their count, and the done part. */
async function readParts(stream, textOf, what) {
	let text = '', parts = 0, done = null;
	for await (const p of stream) {
		assert(!done, `${what}: a part after the done one`);
		if (p.done) {
			done = p;
			eq(textOf(p), '', `${what}: text of the done part`);
		} else {
			parts++;
			text += textOf(p);
		}
	}
	assert(done, `${what}: no done part`);
	return { text, parts, done };
}

async function ollamaChecks({ label, url }) {
	const ollama = new Ollama({ host: url });
	const tag = `ollama[${label}]`;
	const prompt = 'Write a short note about the client libraries';
	const messages = [{ role: 'user', content: 'Say something about the client libraries.' }];
	const options = { num_predict: N };
	let response, content;

	await check(`${tag} list`, async () => {
		const r = await ollama.list();
		assert(Array.isArray(r.models), 'no models array');
		const m = r.models.find((x) => x.name === MODEL);
		assert(m, `models ${JSON.stringify(r.models.map((x) => x.name))} lack ${MODEL}`);
		assert(m.size > 0 && typeof m.digest === 'string' && m.details?.format, 'model lacks size, digest or details');
		assert(!Number.isNaN(Date.parse(m.modified_at)), `modified_at ${m.modified_at}`);
		return r.models.map((x) => x.name).join(',');
	});

	await check(`${tag} version`, async () => {
		const r = await ollama.version();
		assert(/^\d+\.\d+\.\d+/.test(r.version), `version ${JSON.stringify(r.version)}`);
		return r.version;
	});

	await check(`${tag} ps`, async () => {
		const r = await ollama.ps();
		assert(Array.isArray(r.models), 'no models array');
		const m = r.models.find((x) => x.name === MODEL);
		assert(m, `running models ${JSON.stringify(r.models.map((x) => x.name))} lack ${MODEL}`);
		assert(!Number.isNaN(Date.parse(m.expires_at)), `expires_at ${m.expires_at}`);
		assert(m.size_vram > 0, `size_vram ${m.size_vram}`);
		return r.models.map((x) => x.name).join(',');
	});

	await check(`${tag} generate stream:false`, async () => {
		const r = await ollama.generate({ model: MODEL, prompt, stream: false, options });
		response = r.response;
		assert(typeof response === 'string', 'response is not a string');
		eq(words(response), N, `words of ${JSON.stringify(response)}`);
		return `${JSON.stringify(response)}, ${checkDone(r, 'generate')}`;
	});

	await check(`${tag} generate stream:true`, async () => {
		const stream = await ollama.generate({ model: MODEL, prompt, stream: true, options });
		const { text, parts, done } = await readParts(stream, (p) => p.response, 'generate');
		eq(parts, N, 'parts before the done one');
		if (response !== undefined)
			eq(text, response, 'streamed text vs the whole answer');
		return `${parts} parts, ${checkDone(done, 'streamed generate')}`;
	});

	await check(`${tag} chat stream:false`, async () => {
		const r = await ollama.chat({ model: MODEL, messages, stream: false, options });
		eq(r.message?.role, 'assistant', 'message.role');
		content = r.message.content;
		eq(words(content), N, `words of ${JSON.stringify(content)}`);
		return `${JSON.stringify(content)}, ${checkDone(r, 'chat')}`;
	});

	await check(`${tag} chat stream:true`, async () => {
		const stream = await ollama.chat({ model: MODEL, messages, stream: true, options });
		const { text, parts, done } = await readParts(stream, (p) => {
			eq(p.message?.role, 'assistant', 'message.role');
			return p.message.content;
		}, 'chat');
		eq(parts, N, 'parts before the done one');
		if (content !== undefined)
			eq(text, content, 'streamed text vs the whole answer');
		return `${parts} parts, ${checkDone(done, 'streamed chat')}`;
	});
}

/* ---- errors: an emulator with --fail-rate 1 --fail-kind rate_limit ------- */

async function failChecks({ label, url }) {
	const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0,
				    timeout: TIMEOUT_MS });
	const ollama = new Ollama({ host: url });
	const messages = [{ role: 'user', content: 'hello' }];
	const isRateLimit = (e) => e instanceof OpenAI.RateLimitError && e.status === 429;
	const isResponse429 = (e) => e instanceof Error && e.name === 'ResponseError' &&
				     e.status_code === 429;
	const openaiDetail = (e) => {
		assert(typeof e.error?.message === 'string' && e.error.message,
		       `the error body was not read: ${JSON.stringify(e.error)}`);
		return `${e.constructor.name} ${e.status}: ${e.error.message}`;
	};
	const ollamaDetail = (e) => {
		// ollama-js reads the message from a JSON {"error": "..."} body.
		assert(!/^Error 429/.test(e.message), `the error body was not read: ${e.message}`);
		return `${e.name} ${e.status_code}: ${e.message}`;
	};

	await check(`openai[${label}] chat.completions.create -> RateLimitError`, async () =>
		openaiDetail(await expectError(() => client.chat.completions.create({
			model: MODEL, messages, max_tokens: N,
		}), isRateLimit, 'OpenAI.RateLimitError, status 429')));
	await check(`openai[${label}] completions.create stream -> RateLimitError`, async () =>
		openaiDetail(await expectError(() => client.completions.create({
			model: MODEL, prompt: 'hello', max_tokens: N, stream: true,
		}), isRateLimit, 'OpenAI.RateLimitError, status 429')));
	await check(`ollama[${label}] generate stream:false -> ResponseError 429`, async () =>
		ollamaDetail(await expectError(() => ollama.generate({
			model: MODEL, prompt: 'hello', stream: false, options: { num_predict: N },
		}), isResponse429, 'ResponseError, status_code 429')));
	await check(`ollama[${label}] chat stream:true -> ResponseError 429`, async () =>
		ollamaDetail(await expectError(() => ollama.chat({
			model: MODEL, messages, stream: true, options: { num_predict: N },
		}), isResponse429, 'ResponseError, status_code 429')));
}

/* The installed version of package name (its package.json beside the
 * module that `import` resolves). */
function pkg(name) {
	try {
		let dir = new URL('.', import.meta.resolve(name));
		for (let i = 0; i < 4; i++, dir = new URL('..', dir)) {
			try {
				const j = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8'));
				if (j.name === name)
					return j.version;
			} catch { /* not here: one folder up */ }
		}
	} catch { /* no import.meta.resolve */ }
	return '?';
}
console.log(`# node ${process.version}, openai ${pkg('openai')}, ollama ${pkg('ollama')}, ` +
	    `model ${MODEL}, ${N} tokens`);
for (const t of args.openai)
	await openaiChecks(target(t));
for (const t of args.ollama)
	await ollamaChecks(target(t));
for (const t of args.fail)
	await failChecks(target(t));
console.log(failures ? `# ${failures} of ${checks} checks failed` : `# all ${checks} checks passed`);
process.exit(failures ? 1 : 0);
