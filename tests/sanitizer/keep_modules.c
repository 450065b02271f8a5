/* Preloaded into every test of a sanitizer build (tests/sanitizer/meson.build): dlclose does nothing, so every
 * library a test or the CLI it runs has loaded (GPU drivers, ICD loaders) stays mapped until exit.
 * LeakSanitizer finds a block only through pointers in mapped memory: a driver that keeps a block in
 * its globals and is unloaded before exit would leave it "leaked" from an <unknown module>, which no
 * suppression can name. Kept mapped, such blocks are reachable, and a real leak is reported with
 * its module's name (lsan.supp beside it). Built without the sanitizers, so uninstrumented processes
 * (python3) can load it too. */
#include <dlfcn.h>

int dlclose(void* handle) {
  (void)handle;
  return 0;
}
