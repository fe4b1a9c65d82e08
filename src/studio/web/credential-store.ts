/**
 * Where the page keeps a key: in memory only, unless the user ticks "Remember on this device" — then in
 * localStorage under its own name, and forgetting removes it. Nothing else ever writes a key anywhere.
 */
export class CredentialStore {
  private value: string | null;

  constructor(private readonly storageName: string) {
    this.value = localStorage.getItem(storageName);
  }

  get current(): string | null {
    return this.value;
  }

  get remembered(): boolean {
    return localStorage.getItem(this.storageName) !== null;
  }

  use(value: string, remember: boolean): void {
    this.value = value.trim() || null;
    if (this.value && remember) localStorage.setItem(this.storageName, this.value);
    else localStorage.removeItem(this.storageName);
  }

  forget(): void {
    this.value = null;
    localStorage.removeItem(this.storageName);
  }
}
