// The Tint check: Chromium compiles WGSL with Tint, not naga. Every shader of shaders.json
// (every built-in at every schedule of its tuning space, each already accepted by naga) is
// compiled here: createShaderModule in a validation error scope, getCompilationInfo, then
// createComputePipelineAsync, so that a rejection at any stage is seen. Schedules over
// the adapter's limits are skipped with the reason, as the tuner skips them.
//
// Reports through window.forgeLog / window.forgeResult (scripts/web/driver.mjs reads them).
const log = (line) => {
  window.forgeLog.push(line);
  document.getElementById("out").textContent += line + "\n";
};
window.forgeLog = [];

async function main() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) {
    return { ok: false, summary: "tint: error: navigator.gpu.requestAdapter() gave no adapter" };
  }
  const info = adapter.info;
  log(`tint: adapter ${info.vendor} ${info.architecture} ${info.description} (fallback: ${info.isFallbackAdapter})`);
  // The features a shader may enable; each one the adapter lacks skips the shaders that use it.
  const wanted = ["shader-f16", "subgroups"].filter((f) => adapter.features.has(f));
  const limitNames = [
    "maxComputeWorkgroupSizeX",
    "maxComputeWorkgroupSizeY",
    "maxComputeWorkgroupSizeZ",
    "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupStorageSize",
    "maxStorageBuffersPerShaderStage",
  ];
  const requiredLimits = Object.fromEntries(limitNames.map((n) => [n, adapter.limits[n]]));
  const device = await adapter.requestDevice({ requiredFeatures: wanted, requiredLimits });
  const limits = device.limits;
  const shaders = await (await fetch("shaders.json")).json();
  const known = (await (await fetch("known.json")).json()).rejections;
  const knownUsed = new Set();
  const knownRejected = [];
  let passed = 0;
  let skipped = 0;
  const rejected = [];
  // A few compilations at once: Chromium compiles pipelines off its main thread, and the
  // lines are printed in the list's order all the same.
  const results = await pool(shaders, 4, async ({ schedule, wgsl }) => {
    const skip = overLimits(schedule, wgsl, limits, device.features);
    return skip ? { skip } : { errors: await compile(device, wgsl) };
  });
  shaders.forEach(({ kernel, schedule }, i) => {
    const name = `${kernel} (${schedule})`;
    const { skip, errors } = results[i];
    if (skip) {
      skipped++;
      log(`skip  ${name}: ${skip}`);
    } else if (errors.length === 0) {
      passed++;
      log(`ok    ${name}`);
    } else if (errors.some((e) => /maxComputeWorkgroupStorageSize/.test(e))) {
      skipped++;
      log(`skip  ${name}: over the adapter's workgroup memory (${limits.maxComputeWorkgroupStorageSize} bytes): ${errors[0]}`);
    } else {
      const entry = known.findIndex((k) => k.kernel === kernel && errors[0].includes(k.error));
      if (entry >= 0) {
        knownUsed.add(entry);
        knownRejected.push(name);
        log(`KNOWN ${name}: Tint rejects what naga accepts (known.json: ${known[entry].cause}):\n      ${errors[0]}`);
      } else {
        rejected.push(name);
        log(`FAIL  ${name}: Tint rejects what naga accepts:\n      ${errors[0]}`);
      }
    }
  });
  const compiled = passed + rejected.length + knownRejected.length;
  log(`tint: skipped ${skipped} schedule(s) over the adapter's limits`);
  if (knownRejected.length > 0) {
    log(`tint: rejected by Tint, accepted by naga (known, tint/known.json): ${knownRejected.join(", ")}`);
  }
  if (rejected.length > 0) {
    log(`tint: error: rejected by Tint, accepted by naga (new): ${rejected.join(", ")}`);
  }
  // A listed rejection that no longer happens fails too, so that the list stays true.
  const stale = known.filter((_, i) => !knownUsed.has(i)).map((k) => k.kernel);
  if (stale.length > 0) {
    log(`tint: error: known.json lists rejections that did not happen (remove them): ${stale.join(", ")}`);
  }
  return {
    ok: rejected.length === 0 && stale.length === 0 && compiled > 0,
    summary: `tint: ${passed}/${compiled} shaders compiled by Tint (${knownRejected.length} known rejections, ${rejected.length} new, ${skipped} skipped over the adapter's limits)`,
  };
}

// The reason a schedule cannot run on this device, as forge_core::plan::check_schedule
// checks it, or null. The schedule reads `wg=X[xY[xZ]] ...`.
function overLimits(schedule, wgsl, limits, features) {
  const m = /wg=(\d+)(?:x(\d+))?(?:x(\d+))?/.exec(schedule);
  if (m) {
    const [x, y, z] = [m[1], m[2] ?? 1, m[3] ?? 1].map(Number);
    const axes = [
      [x, limits.maxComputeWorkgroupSizeX, "X"],
      [y, limits.maxComputeWorkgroupSizeY, "Y"],
      [z, limits.maxComputeWorkgroupSizeZ, "Z"],
    ];
    for (const [v, max, axis] of axes) {
      if (v > max) return `workgroup extent ${v} is over the adapter's maxComputeWorkgroupSize${axis} of ${max}`;
    }
    if (x * y * z > limits.maxComputeInvocationsPerWorkgroup) {
      return `${x * y * z} invocations per workgroup is over the adapter's maxComputeInvocationsPerWorkgroup of ${limits.maxComputeInvocationsPerWorkgroup}`;
    }
  }
  // wgpu's own extension: WebGPU has no cooperative matrices, so Tint does not know it.
  if (/^\s*enable\s+wgpu_cooperative_matrix\s*;/m.test(wgsl)) {
    return "needs cooperative matrices (wgpu_cooperative_matrix), which WebGPU lacks";
  }
  if (/^\s*enable\s+f16\s*;/m.test(wgsl) && !features.has("shader-f16")) {
    return "needs shader-f16, which the adapter lacks";
  }
  if (/^\s*enable\s+subgroups\s*;/m.test(wgsl) && !features.has("subgroups")) {
    return "needs subgroups, which the adapter lacks";
  }
  return null;
}

// `work` on every item, at most `width` at once; the results in the items' order.
async function pool(items, width, work) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

// Every error Tint or Dawn reports for one shader, at any stage; empty when it compiles.
//
// Error scopes are a stack on the device, not per task: with several compilations in
// flight, a scope popped after an `await` would be another shader's. So the scope covers
// createShaderModule alone and is popped at once (the pop's promise settles later, with
// this module's errors); the pipeline's errors come from its own promise.
async function compile(device, code) {
  const errors = [];
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code });
  const scope = device.popErrorScope();
  const messages = (await module.getCompilationInfo()).messages;
  for (const msg of messages) {
    if (msg.type === "error") errors.push(`${msg.lineNum}:${msg.linePos}: ${msg.message}`);
  }
  const scoped = await scope;
  if (scoped) errors.push(`validation: ${scoped.message}`);
  try {
    await device.createComputePipelineAsync({ layout: "auto", compute: { module } });
  } catch (e) {
    errors.push(`pipeline: ${e.message}`);
  }
  return [...new Set(errors)];
}

main().then(
  (result) => (window.forgeResult = result),
  (e) => (window.forgeResult = { ok: false, summary: `tint: error: ${e?.stack ?? e}` }),
);
