# Sourced by the device scripts: the Vulkan loader from .gl/*.deb (the NVIDIA machine has
# the driver's ICD but no libvulkan.so.1), the ICD's path, the carried binary, and $OUT.
# .gl/ holds `apt-get download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2
# libopengl0`: the ICD (libGLX_nvidia.so.0) finds no vkCreateInstance without glvnd.
OUT=${OUT:-/tmp/knudsen-device}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
K=${K:-carry/knudsen}
# Carried test binaries fail, instead of noting a skip, where CUDA does not answer here.
export TESTS_REQUIRE_CUDA=1
