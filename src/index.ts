// The package's entry point (`import { RoostClient } from 'roost'`): the typed client for
// talking to a Roost service, the wire types it speaks, and startRoost/loadConfig for
// running the service inside another Node program. A program that only talks to a service
// imports 'roost/client', which loads none of the server's modules.
import './require-node.js';
// The client and its wire types: what 'roost/client' exports, and the service besides.
export * from './client-entry.js';

export { startRoost, type RunningRoost, type StartOptions } from './server.js';
export { loadConfig, ConfigError, ENV_VARS, type Config } from './config.js';
