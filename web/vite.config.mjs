// The web app's build: React, bundled by Vite from web/ into web/dist/,
// which the Go server serves (`make dev`: `-web web/dist`) or Firebase
// Hosting hosts. `npx vite web` serves it with hot reload instead, the
// API's paths and /config.json proxied to a running server (BACKEND,
// default make dev's http://127.0.0.1:8090).
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

const backend = process.env.BACKEND || "http://127.0.0.1:8090";
const api = ["/config.json", "/ai-sdk", "/chat", "/sessions", "/account", "/memory", "/search", "/attachments", "/usage", "/models", "/callable", "/healthz"];

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true, target: "es2022", chunkSizeWarningLimit: 1500 },
  server: { proxy: Object.fromEntries(api.map((p) => [p, backend])) },
});
