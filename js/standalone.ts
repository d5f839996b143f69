// Entry point of the self-contained exported page (placeholder until the host lands).
export {};
