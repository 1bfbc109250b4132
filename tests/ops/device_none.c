/* No device memory in this test build (see device.h): ops_cuda exits 77. */
#include "device.h"

const ops_device *ops_cuda_device(void) { return 0; }
