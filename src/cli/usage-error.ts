/** Bad input from the operator on the command line: printed as is, exit code 1. */
export class UsageError extends Error {}
