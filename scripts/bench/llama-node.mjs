// benchmark helper: llama.cpp's Vulkan loader through node-llama-cpp, for llama-vulkan.sh.
// Issue 9 helper: loads a GGUF through node-llama-cpp's prebuilt llama.cpp Vulkan backend with every layer
// offloaded, prints "LOADED <ms>" once loadModel() resolves, holds a few seconds, then exits.
//
//   NODE_PATH is not used; run from a folder whose node_modules holds node-llama-cpp and
//   @node-llama-cpp/linux-x64-vulkan (npm install --ignore-scripts node-llama-cpp @node-llama-cpp/linux-x64-vulkan):
//   GGML_VK_VISIBLE_DEVICES=0 node scripts/bench/llama-node.mjs MODEL.gguf [--hold-ms 3000] [--no-mmap] [--layers N]
//
// llama.cpp's Vulkan backend skips CPU-type devices (lavapipe) unless GGML_VK_VISIBLE_DEVICES names them.
// Set BENCH_LLAMA_MODULES to the node_modules folder if the script is not run beside it.
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import { readFileSync } from "node:fs";

const t0 = performance.now();
const args = process.argv.slice(2);
const modelPath = args.find((a) => !a.startsWith("--") && !/^\d+$/.test(a));
const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : dflt;
};
const holdMs = Number(opt("--hold-ms", "3000"));
const layers = opt("--layers", "max");
const useMmap = args.includes("--no-mmap") ? false : args.includes("--mmap") ? true : "auto";
if (!modelPath) {
    console.error("usage: llama-node.mjs MODEL.gguf [--hold-ms MS] [--layers N|max] [--mmap|--no-mmap]");
    process.exit(2);
}

const modules = process.env.BENCH_LLAMA_MODULES ?? path.join(process.cwd(), "node_modules");
const require = createRequire(path.join(modules, "x.js"));
const { getLlama, LlamaLogLevel } = await import(require.resolve("node-llama-cpp"));

const status = () => {
    const s = {};
    for (const l of readFileSync("/proc/self/status", "utf8").split("\n")) {
        const m = /^(VmHWM|VmRSS|RssAnon|RssFile):\s+(\d+)/.exec(l);
        if (m) s[m[1]] = Number(m[2]);
    }
    return s;
};

const llama = await getLlama({
    gpu: "vulkan",
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    logLevel: LlamaLogLevel.debug,
    logger: (level, message) => process.stderr.write(`[llama ${level}] ${message}${message.endsWith("\n") ? "" : "\n"}`),
});
const tInit = performance.now();
console.log(`INIT ${(tInit - t0).toFixed(0)} ms gpu=${llama.gpu} build=${llama.buildType} ` +
    `llama.cpp=${llama.llamaCppRelease.repo}@${llama.llamaCppRelease.release} ` +
    `devices=${JSON.stringify(await llama.getGpuDeviceNames())} vram=${JSON.stringify(await llama.getVramState())} ` +
    `supportsMmap=${llama.supportsMmap} gpuSupportsMmap=${llama.gpuSupportsMmap} status=${JSON.stringify(status())}`);

const tLoad0 = performance.now();
const model = await llama.loadModel({
    modelPath,
    gpuLayers: layers === "max" ? "max" : Number(layers),
    useMmap,
    defaultContextFlashAttention: false,
});
const tLoaded = performance.now();
console.log(`LOADED load_ms=${(tLoaded - tLoad0).toFixed(0)} since_start_ms=${(tLoaded - t0).toFixed(0)} ` +
    `gpuLayers=${model.gpuLayers} size=${model.size} vram=${JSON.stringify(await llama.getVramState())} ` +
    `status=${JSON.stringify(status())}`);
await new Promise((r) => setTimeout(r, holdMs));
console.log(`HELD status=${JSON.stringify(status())}`);
await model.dispose();
await llama.dispose();
