// re2 is left out (see package.json): whoever requires it falls back to
// JavaScript's RegExp, as superstatic does when re2 failed to build.
throw new Error("re2 is not installed: emulator/no-re2 stands in for it");
