/** The admin API's answers as the console reads them (src/api/schemas/admin.ts has the full shapes). */

export interface Account {
  id: string;
  name: string;
  balance: string;
  available: string;
  active_keys: number;
  created_at: string;
}
export interface Key {
  id: string;
  label: string;
  created_at: string;
  revoked_at: string | null;
}
export interface Model {
  id: string;
  ready: boolean;
  detail?: string;
}

export interface LimitValues {
  requests_per_minute: number | null;
  tokens_per_minute: number | null;
  concurrent: number | null;
}
export interface Limits {
  subject: string;
  kind: 'account' | 'key';
  overrides: LimitValues;
  effective: Record<keyof LimitValues, number>;
  enforced?: boolean;
}

export interface Webhook {
  account_id: string;
  url: string | null;
  updated_at: string | null;
  secret?: string;
}

export interface UsageRecord {
  created_at: string;
  model: string;
  unit: string;
  quantity: number;
  cost: string;
  key_id: string;
}
export interface Call {
  started_at: string;
  carrier: string;
  mode: string;
  duration_ms: number;
  turns: number;
  cost: string;
  end_reason: string;
}
