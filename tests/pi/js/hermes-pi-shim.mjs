// pi's RpcClient starts `node <cliPath> --mode rpc ...`; this cliPath runs `hermes-pi` (from
// $HERMES_PI_BIN) with the same arguments and the same stdio, passes signals on and exits with
// its code, so the client drives hermes pi exactly as it would drive pi.
import { spawn } from "node:child_process";

const child = spawn(process.env.HERMES_PI_BIN, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGHUP", "SIGINT"]) {
	process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
	process.exit(code ?? 128 + (signal === "SIGTERM" ? 15 : signal === "SIGHUP" ? 1 : 2));
});
child.on("error", (error) => {
	process.stderr.write(`hermes-pi-shim: ${error.message}\n`);
	process.exit(127);
});
