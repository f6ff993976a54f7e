// The web app: React, the AI SDK's useChat for the conversation (over this
// backend's /ai-sdk/chat), the Firebase JS SDK for sign-in and for what is
// read live (the chat list, the open chat's document). Built by Vite.
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { startBackend } from "./backend";
import "./style.css";
import "./look.css";

const root = createRoot(document.getElementById("root")!);
startBackend().then(
  (backend) => root.render(<App backend={backend} />),
  (e) => root.render(<p role="alert">The app could not start: {String(e)}. Is /config.json there?</p>),
);
