// Runs the kernel of kernel.json (written by `cargo run --example web -- DIR`: the WGSL that
// #[forge_kernel] generated, the inputs and the oracle's result) on the browser's WebGPU and
// compares the GPU's result with the oracle's, element by element.
//
// `?perturb=1` flips one bit of one GPU result before the comparison: the page must then
// fail (scripts/web-certify checks that it does, so the comparison cannot rot into a pass).
const out = document.getElementById("out");
window.forgeLog = [];
const log = (line) => {
  window.forgeLog.push(line);
  out.textContent += line + "\n";
};

async function main() {
  const adapter = await navigator.gpu?.requestAdapter();
  if (!adapter) return { ok: false, summary: "example: error: navigator.gpu.requestAdapter() gave no adapter" };
  const device = await adapter.requestDevice();
  const k = await (await fetch("kernel.json")).json();
  log(`example: ${k.kernel} on ${adapter.info.vendor} ${adapter.info.architecture}, n = ${k.n}`);

  // The bindings by name, as the generated WGSL declares them: the inputs, the outputs,
  // then the scalars' uniform `fg_params`.
  const bindings = Object.fromEntries(
    [...k.wgsl.matchAll(/@binding\((\d+)\)\s*var<([^>]*)>\s*(\w+)/g)].map((m) => [m[3], Number(m[1])]),
  );
  // Storage bindings are padded to 16 bytes: the WGSL may read them as vec4 arrays.
  const padded = (bytes) => Math.ceil(bytes / 16) * 16;
  const { STORAGE, UNIFORM, COPY_SRC, COPY_DST, MAP_READ } = GPUBufferUsage;
  const upload = (words, usage) => {
    const buffer = device.createBuffer({ size: padded(words.length * 4), usage: usage | COPY_DST });
    device.queue.writeBuffer(buffer, 0, new Uint32Array(words));
    return buffer;
  };
  const x = upload(k.x, STORAGE);
  const params = upload(k.params, UNIFORM);
  const size = padded(k.n * 4);
  const y = device.createBuffer({ size, usage: STORAGE | COPY_SRC });
  const readback = device.createBuffer({ size, usage: MAP_READ | COPY_DST });

  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code: k.wgsl });
  const pipeline = await device.createComputePipelineAsync({ layout: "auto", compute: { module } });
  const group = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: bindings.x, resource: { buffer: x } },
      { binding: bindings.y, resource: { buffer: y } },
      { binding: bindings.fg_params, resource: { buffer: params } },
    ],
  });
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(Math.ceil(k.n / k.workgroup));
  pass.end();
  encoder.copyBufferToBuffer(y, 0, readback, 0, size);
  device.queue.submit([encoder.finish()]);
  const error = await device.popErrorScope();
  if (error) return { ok: false, summary: `example: error: WebGPU validation: ${error.message}` };
  await readback.mapAsync(GPUMapMode.READ);
  const gpu = new Uint32Array(readback.getMappedRange().slice(0, k.n * 4));
  readback.unmap();

  if (new URLSearchParams(location.search).has("perturb")) {
    gpu[k.n >> 1] ^= 1;
    log(`example: perturbed the GPU's element ${k.n >> 1} (?perturb): this run must fail`);
  }
  let mismatches = 0;
  let first = -1;
  for (let i = 0; i < k.n; i++) {
    if (gpu[i] !== k.expected[i]) {
      mismatches++;
      if (first < 0) first = i;
    }
  }
  if (mismatches > 0) {
    return {
      ok: false,
      summary: `example: FAIL ${k.kernel}: ${mismatches}/${k.n} elements differ from the oracle; first at ${first}: GPU ${gpu[first]}, oracle ${k.expected[first]}`,
    };
  }
  return { ok: true, summary: `example: ${k.kernel}: all ${k.n} GPU results equal the oracle's` };
}

main().then(
  (result) => {
    log(result.summary);
    window.forgeResult = { ok: result.ok };
  },
  (e) => (window.forgeResult = { ok: false, summary: `example: error: ${e?.stack ?? e}` }),
);
