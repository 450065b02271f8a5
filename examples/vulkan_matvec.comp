#version 450
// y = W x for one weight matrix exactly where lwload put it: W is the tensor's VkBuffer, read from
// the tensor's element offset inside it (a region holds many tensors).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Weights { float w[]; };
layout(std430, binding = 1) readonly buffer Input { float x[]; };
layout(std430, binding = 2) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Shape { uint offset; uint rows; uint cols; } shape;

void main() {
  const uint row = gl_GlobalInvocationID.x;
  if (row >= shape.rows) return;
  float sum = 0.0;
  for (uint c = 0; c < shape.cols; ++c) sum += w[shape.offset + row * shape.cols + c] * x[c];
  y[row] = sum;
}
