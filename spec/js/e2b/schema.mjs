// envd's Process and Filesystem services for the test peer, written from
// E2B's published contract (e2b-dev/infra packages/envd/spec/{process,
// filesystem}/*.proto, 2026-08) as protobuf-es 1.x message types. The JSON
// mapping (camelCase, bytes as base64, int64 as strings, enums by name) is
// protobuf-es's own, as envd's Go server gives it.
import { createRequire } from "node:module";
import { resolve } from "node:path";

// the test peers' packages live in build/npm (scripts/npm-deps.sh)
const require = createRequire(resolve(process.env.NPM_DIR || "build/npm") + "/");
const { proto3, Timestamp, MethodKind } = require("@bufbuild/protobuf");

const msg = (name, fields) => proto3.makeMessageType(name, fields);
const enumType = (name, values) => proto3.getEnumType(proto3.makeEnum(name, values));
const m = (no, name, T, extra = {}) => ({ no, name, kind: "message", T, ...extra });
const s = (no, name, T, extra = {}) => ({ no, name, kind: "scalar", T, ...extra });
const STRING = 9, BOOL = 8, UINT32 = 13, SINT32 = 17, INT64 = 3, BYTES = 12;

// ---- process ----------------------------------------------------------------
const Size = msg("process.PTY.Size", [s(1, "cols", UINT32), s(2, "rows", UINT32)]);
const PTY = msg("process.PTY", [m(1, "size", Size)]);
const ProcessConfig = msg("process.ProcessConfig", [
  s(1, "cmd", STRING), s(2, "args", STRING, { repeated: true }),
  { no: 3, name: "envs", kind: "map", K: STRING, V: { kind: "scalar", T: STRING } },
  s(4, "cwd", STRING, { opt: true }),
]);
const ProcessInfo = msg("process.ProcessInfo", [m(1, "config", ProcessConfig), s(2, "pid", UINT32), s(3, "tag", STRING, { opt: true })]);
const ListRequest = msg("process.ListRequest", []);
const ListResponse = msg("process.ListResponse", [m(1, "processes", ProcessInfo, { repeated: true })]);
const StartRequest = msg("process.StartRequest", [
  m(1, "process", ProcessConfig), m(2, "pty", PTY, { opt: true }), s(3, "tag", STRING, { opt: true }),
  s(4, "stdin", BOOL, { opt: true }),
]);
const StartEvent = msg("process.ProcessEvent.StartEvent", [s(1, "pid", UINT32)]);
const DataEvent = msg("process.ProcessEvent.DataEvent", [
  s(1, "stdout", BYTES, { oneof: "output" }), s(2, "stderr", BYTES, { oneof: "output" }), s(3, "pty", BYTES, { oneof: "output" }),
]);
const EndEvent = msg("process.ProcessEvent.EndEvent", [
  s(1, "exit_code", SINT32), s(2, "exited", BOOL), s(3, "status", STRING), s(4, "error", STRING, { opt: true }),
]);
const KeepAlive = msg("process.ProcessEvent.KeepAlive", []);
const ProcessEvent = msg("process.ProcessEvent", [
  m(1, "start", StartEvent, { oneof: "event" }), m(2, "data", DataEvent, { oneof: "event" }),
  m(3, "end", EndEvent, { oneof: "event" }), m(4, "keepalive", KeepAlive, { oneof: "event" }),
]);
const StartResponse = msg("process.StartResponse", [m(1, "event", ProcessEvent)]);
const ConnectResponse = msg("process.ConnectResponse", [m(1, "event", ProcessEvent)]);
const ProcessSelector = msg("process.ProcessSelector", [
  s(1, "pid", UINT32, { oneof: "selector" }), s(2, "tag", STRING, { oneof: "selector" }),
]);
const ConnectRequest = msg("process.ConnectRequest", [m(1, "process", ProcessSelector)]);
const UpdateRequest = msg("process.UpdateRequest", [m(1, "process", ProcessSelector), m(2, "pty", PTY, { opt: true })]);
const UpdateResponse = msg("process.UpdateResponse", []);
const ProcessInput = msg("process.ProcessInput", [
  s(1, "stdin", BYTES, { oneof: "input" }), s(2, "pty", BYTES, { oneof: "input" }),
]);
const SendInputRequest = msg("process.SendInputRequest", [m(1, "process", ProcessSelector), m(2, "input", ProcessInput)]);
const SendInputResponse = msg("process.SendInputResponse", []);
const Signal = enumType("process.Signal", [
  { no: 0, name: "SIGNAL_UNSPECIFIED" }, { no: 15, name: "SIGNAL_SIGTERM" }, { no: 9, name: "SIGNAL_SIGKILL" },
]);
const SendSignalRequest = msg("process.SendSignalRequest", [
  m(1, "process", ProcessSelector), { no: 2, name: "signal", kind: "enum", T: Signal },
]);
const SendSignalResponse = msg("process.SendSignalResponse", []);
const CloseStdinRequest = msg("process.CloseStdinRequest", [m(1, "process", ProcessSelector)]);
const CloseStdinResponse = msg("process.CloseStdinResponse", []);

const unary = (name, I, O) => ({ name, I, O, kind: MethodKind.Unary });
const stream = (name, I, O) => ({ name, I, O, kind: MethodKind.ServerStreaming });

export const Process = {
  typeName: "process.Process",
  methods: {
    list: unary("List", ListRequest, ListResponse),
    connect: stream("Connect", ConnectRequest, ConnectResponse),
    start: stream("Start", StartRequest, StartResponse),
    update: unary("Update", UpdateRequest, UpdateResponse),
    sendInput: unary("SendInput", SendInputRequest, SendInputResponse),
    sendSignal: unary("SendSignal", SendSignalRequest, SendSignalResponse),
    closeStdin: unary("CloseStdin", CloseStdinRequest, CloseStdinResponse),
  },
};

// ---- filesystem -------------------------------------------------------------
const FileType = enumType("filesystem.FileType", [
  { no: 0, name: "FILE_TYPE_UNSPECIFIED" }, { no: 1, name: "FILE_TYPE_FILE" },
  { no: 2, name: "FILE_TYPE_DIRECTORY" }, { no: 3, name: "FILE_TYPE_SYMLINK" },
]);
export const FILE = 1, DIRECTORY = 2, SYMLINK = 3;
export const EntryInfo = msg("filesystem.EntryInfo", [
  s(1, "name", STRING), { no: 2, name: "type", kind: "enum", T: FileType }, s(3, "path", STRING),
  s(4, "size", INT64), s(5, "mode", UINT32), s(6, "permissions", STRING), s(7, "owner", STRING),
  s(8, "group", STRING), m(9, "modified_time", Timestamp), s(10, "symlink_target", STRING, { opt: true }),
]);
const PathRequest = (name) => msg(name, [s(1, "path", STRING)]);
const EntryResponse = (name) => msg(name, [m(1, "entry", EntryInfo)]);
const MoveRequest = msg("filesystem.MoveRequest", [s(1, "source", STRING), s(2, "destination", STRING)]);
const ListDirRequest = msg("filesystem.ListDirRequest", [s(1, "path", STRING), s(2, "depth", UINT32)]);
const ListDirResponse = msg("filesystem.ListDirResponse", [m(1, "entries", EntryInfo, { repeated: true })]);

export const Filesystem = {
  typeName: "filesystem.Filesystem",
  methods: {
    stat: unary("Stat", PathRequest("filesystem.StatRequest"), EntryResponse("filesystem.StatResponse")),
    makeDir: unary("MakeDir", PathRequest("filesystem.MakeDirRequest"), EntryResponse("filesystem.MakeDirResponse")),
    move: unary("Move", MoveRequest, EntryResponse("filesystem.MoveResponse")),
    listDir: unary("ListDir", ListDirRequest, ListDirResponse),
    remove: unary("Remove", PathRequest("filesystem.RemoveRequest"), msg("filesystem.RemoveResponse", [])),
  },
};
